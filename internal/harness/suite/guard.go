package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Rule is one regression threshold: tickdb's figure on Metric as a
// fraction of the machine's limit measured in the same repetition (Times:
// 1 = at the limit) must be at least MinVsLimit, and its heap allocations
// per operation at most MaxAllocs. A zero MinVsLimit or a nil MaxAllocs
// leaves that check out.
type Rule struct {
	Metric     string   `json:"metric"`
	MinVsLimit float64  `json:"min_vs_limit,omitempty"`
	MaxAllocs  *float64 `json:"max_allocs,omitempty"`
	Why        string   `json:"why,omitempty"`
}

// Guard is the regression guard's thresholds file.
type Guard struct {
	About string `json:"about"`
	Rules []Rule `json:"rules"`
}

// LoadGuard reads a thresholds file.
func LoadGuard(path string) (*Guard, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var g Guard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(g.Rules) == 0 {
		return nil, fmt.Errorf("%s: no rules", path)
	}
	return &g, nil
}

// Verdict is one checked rule.
type Verdict struct {
	Rule  Rule
	Check string  // "vs-limit" or "allocs"
	Got   float64 // the best repetition's ratio, or allocations per op
	OK    bool
	Msg   string
}

// Check applies the guard to r. The ratio checked is the best over the
// repetitions of tickdb's figure over the limit's figure of the same
// repetition: noise on a shared machine slows some repetitions down, so
// the best one is what a regression must spoil. A rule whose figures are
// missing from r fails: a guard that silently checks nothing is no guard.
func (g *Guard) Check(r *Report) (vs []Verdict, ok bool) {
	ok = true
	for _, rule := range g.Rules {
		t := r.Find(rule.Metric, TickDB)
		if rule.MinVsLimit > 0 {
			v := Verdict{Rule: rule, Check: "vs-limit"}
			l := r.Find(rule.Metric, Limit)
			switch {
			case t == nil || l == nil:
				v.Msg = fmt.Sprintf("%s: no tickdb or limit figure in the report", rule.Metric)
			default:
				v.Got = BestRatio(t, l)
				v.OK = v.Got >= rule.MinVsLimit
				v.Msg = fmt.Sprintf("%s: tickdb ÷ limit = %.3g, threshold ≥ %.3g", rule.Metric, v.Got, rule.MinVsLimit)
			}
			ok = ok && v.OK
			vs = append(vs, v)
		}
		if rule.MaxAllocs != nil {
			v := Verdict{Rule: rule, Check: "allocs"}
			switch {
			case t == nil || t.Allocs < 0:
				v.Msg = fmt.Sprintf("%s: no allocation count in the report", rule.Metric)
			default:
				v.Got = t.Allocs
				v.OK = v.Got <= *rule.MaxAllocs
				v.Msg = fmt.Sprintf("%s: %.3g allocations per operation, threshold ≤ %.3g", rule.Metric, v.Got, *rule.MaxAllocs)
			}
			ok = ok && v.OK
			vs = append(vs, v)
		}
	}
	return vs, ok
}

// BestRatio is the best over the repetitions of Times(t, l) pairing the
// repetitions by index.
func BestRatio(t, l *Result) float64 {
	best := 0.0
	for i := 0; i < len(t.Reps) && i < len(l.Reps); i++ {
		best = max(best, Times(t.Reps[i], l.Reps[i], t.Lower))
	}
	return best
}
