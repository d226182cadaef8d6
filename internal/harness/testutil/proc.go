package testutil

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcStatusKiB reads one "<key>: <n> kB" line of /proc/<pid>/status
// (VmRSS, VmHWM, RssShmem...): a process's memory as the kernel counts
// it, for tests that bound another process's resident memory.
func ProcStatusKiB(pid int, key string) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
			return strconv.ParseInt(v, 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("testutil: no %s in /proc/%d/status", key, pid)
}
