package child

import (
	"bufio"
	"fmt"
	"os"
)

// Role is this process's role: the one Start gave it, or "" when it was
// not started as a child.
func Role() string { return os.Getenv(Env) }

// Run runs this process's role when roles has it, then exits: with status
// 0 when the role's function returns nil, else with status 1 after
// reporting "error <message>" and printing the message as the last line
// on stderr. It returns at once when this process is not a child, or is a
// child in a role roles lacks (a test binary's TestChildXxx roles). Call
// it first in main, and in TestMain of a test binary whose tests start
// these roles.
func Run(roles map[string]func() error) {
	f, ok := roles[Role()]
	if !ok || Role() == "" {
		return
	}
	if err := f(); err != nil {
		Report("error %v", err)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Report writes one report line to the parent. The line goes out in a
// single write(2) on the unbuffered stdout, so a SIGKILL leaves either
// the whole line or none of it in the pipe.
func Report(format string, args ...any) {
	line := reportPrefix + fmt.Sprintf(format, args...) + "\n"
	_, _ = os.Stdout.Write([]byte(line))
}

// Commands returns the lines the parent sends on stdin. The channel is
// closed at EOF, which is when the reading goroutine ends: the parent
// closes stdin with CloseStdin or Kill, or by exiting.
func Commands() <-chan string {
	c := make(chan string, 16)
	go func() {
		defer close(c)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			c <- sc.Text()
		}
	}()
	return c
}
