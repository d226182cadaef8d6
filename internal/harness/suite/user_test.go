package suite

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestUserPlan checks the user protocol's queries: their counts and
// answers, no window overlapping another of the same process in time or
// an earlier query's rows, the scans on symbols no window asks for.
func TestUserPlan(t *testing.T) {
	d := Generate(20_000)
	p, err := d.userPlan()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.After) != userWindows || len(p.Windows) != userWindows || len(p.Scans) != userScans {
		t.Fatalf("%d windows after ingest, %d in the fresh process, %d scans; want %d, %d, %d",
			len(p.After), len(p.Windows), len(p.Scans), userWindows, userWindows, userScans)
	}
	child := append([]Query{p.ColdWindow}, p.Windows...)
	windows := append(slices.Clone(p.After), child...)
	scans := append([]Query{p.ColdScan}, p.Scans...)
	for _, q := range append(slices.Clone(windows), scans...) {
		if want := bruteForce(d, q.Sym, q.From, q.To); q.Want != want {
			t.Fatalf("query %+v: want field %+v, brute force %+v", q, q.Want, want)
		}
	}
	overlap := func(a, b Query) bool { return a.From < b.To && b.From < a.To }
	for _, g := range [][]Query{p.After, child} {
		for i := range g {
			for j := range i {
				if overlap(g[i], g[j]) {
					t.Fatalf("windows %+v and %+v of one process overlap in time", g[j], g[i])
				}
			}
		}
	}
	for i := range windows {
		for j := range i {
			if windows[i].Sym == windows[j].Sym && overlap(windows[i], windows[j]) {
				t.Fatalf("window %+v overlaps the rows of %+v", windows[i], windows[j])
			}
		}
	}
	for i, s := range scans {
		if slices.ContainsFunc(windows, func(q Query) bool { return q.Sym == s.Sym }) ||
			slices.ContainsFunc(scans[:i], func(q Query) bool { return q.Sym == s.Sym }) {
			t.Fatalf("scan of symbol %d: another query asks for it", s.Sym)
		}
		if s.Want.Rows != int64(d.SymCount(s.Sym)) {
			t.Fatalf("scan of symbol %d wants %d rows, it has %d", s.Sym, s.Want.Rows, d.SymCount(s.Sym))
		}
	}
	if q, err := d.userPlan(); err != nil || !slices.Equal(q.Windows, p.Windows) {
		t.Fatalf("a second plan differs (%v)", err)
	}
}

// userMetrics are the user protocol's metrics; the bytes ones need
// /proc/self/io.
var userMetrics = []string{MAfterIngest, MClose, MDiskBytes, MOpenFresh, MWindowFirst, MScanFirst, MWindowRandom, MScanRandom}
var userBytes = []string{MBytesOpen, MBytesWindow, MBytesScan, MBytesWindows, MBytesScans}

// CheckUserMetrics fails t unless r holds every user protocol metric of
// each system, with a latency distribution for the ns ones.
func checkUserMetrics(t *testing.T, r *Report, systems ...string) {
	t.Helper()
	ms := userMetrics
	if _, err := readBytes(); err == nil {
		ms = append(slices.Clone(ms), userBytes...)
	}
	for _, s := range systems {
		for _, m := range ms {
			x := r.Find(m, s)
			if x == nil || len(x.Reps) != r.Reps || x.Value < 0 || (x.Unit != UnitBytes && x.Value <= 0) {
				t.Errorf("%s, %s: %+v", m, s, x)
				continue
			}
			if x.Unit == "ns" && (x.Lat == nil || x.Lat.Count < int64(r.Reps)) {
				t.Errorf("%s, %s: latency %+v", m, s, x.Lat)
			}
		}
	}
}

// wrongChildPeer is tickdb answering one row short in the fresh process
// only: right after ingest it is right.
var wrongChildPeer = Peer{
	Name: "wrongchild",
	Open: TickDBPeer.Open,
	OpenExisting: func(dir string, s Shape) (System, error) {
		sys, err := TickDBPeer.OpenExisting(dir, s)
		return wrong{sys}, err
	},
}

// wrongAfterPeer is tickdb answering one row short, in the ingesting
// process too.
var wrongAfterPeer = Peer{Name: "wrongafter", Open: wrongPeer.Open, OpenExisting: wrongChildPeer.OpenExisting}

func TestUserProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests 20k rows per case and runs a child process")
	}
	for _, mode := range []CloseMode{ClosePlain, CloseCompacted} {
		t.Run("close="+string(mode), func(t *testing.T) {
			cfg := Config{N: 20_000, Reps: 1, Dir: t.TempDir(), UserOnly: true, TickDBClose: mode}
			r, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkUserMetrics(t, r, TickDB)
			// The default Close's store is measured again after
			// CloseCompacted(0), in a row of its own: no more bytes (the
			// default Close already leaves no raw segment of at most 1 M
			// rows).
			plainB, cmp := r.Find(MDiskBytes, TickDB), r.Find(MDiskBytesCmp, TickDB)
			if mode == CloseCompacted && cmp != nil {
				t.Errorf("close mode compacted also measured %s: %+v", MDiskBytesCmp, cmp)
			}
			if mode == ClosePlain && (cmp == nil || plainB == nil || cmp.Value <= 0 || cmp.Value > plainB.Value) {
				t.Errorf("%s %+v, want at most %s %+v", MDiskBytesCmp, cmp, MDiskBytes, plainB)
			}
			if x := r.Find(MWindow, TickDB); x != nil {
				t.Errorf("UserOnly ran the window workload: %+v", x)
			}
			var b strings.Builder
			if err := r.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{MWindowRandom, MBytesWindow, MDiskBytes} {
				if !strings.Contains(b.String(), "| "+m+" |") {
					t.Errorf("table lacks %s:\n%s", m, b.String())
				}
			}
			if left, _ := os.ReadDir(cfg.Dir); len(left) != 0 {
				t.Errorf("the run left %d entries in its directory", len(left))
			}
		})
	}
	// A wrong answer fails the run, in the ingesting process and in the
	// fresh one.
	for _, p := range []Peer{wrongAfterPeer, wrongChildPeer} {
		t.Run("peer="+p.Name, func(t *testing.T) {
			cfg := Config{N: 20_000, Reps: 1, Dir: t.TempDir(), UserOnly: true, Peers: []Peer{p}}
			_, err := Run(cfg)
			if err == nil || !strings.Contains(err.Error(), p.Name) || !strings.Contains(err.Error(), "the data holds") {
				t.Fatalf("a wrong peer: %v", err)
			}
			if left, _ := os.ReadDir(cfg.Dir); len(left) != 0 {
				t.Errorf("the run left %d entries in its directory", len(left))
			}
		})
	}
	if _, err := Run(Config{N: 20_000, Reps: 1, Dir: t.TempDir(), UserOnly: true, TickDBClose: "nope"}); err == nil {
		t.Error("close mode nope: no error")
	}
}
