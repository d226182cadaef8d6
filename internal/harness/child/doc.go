// Package child runs this executable again as a child process in a named
// role, and is that role on the child's side: tickdb's one way to start a
// second process of its own (the cross-process tests, the benchmark suite's
// reader and fresh processes, the demo's verifying reader).
//
// The parent starts the child with Start, which re-executes the current
// binary (os.Executable) with Env set to the role. The child's main, or a
// test binary's TestMain, calls Run first, which runs the role's function
// and exits; a test binary may instead select a TestChildXxx function with
// -test.run and check the role itself (Role). The two talk in lines: the
// child reports on stdout (Report: lines starting with a prefix, so that
// whatever else it prints is kept apart as its log) and reads commands on
// stdin (Commands); the parent takes reports with Next, sends commands with
// Send, and ends the child with Kill (SIGKILL) or waits for it with Wait.
//
// # Concurrency
//
// A Child's methods are safe for concurrent use. Report may be called from
// any goroutine of the child; Commands once per process.
//
// # Caveats
//
// The child gets SIGKILL when the thread that started it exits
// (PR_SET_PDEATHSIG follows the thread, not the process): Start keeps that
// thread locked to a goroutine of its own until the child is reaped, so a
// goroutine that ends locked to its thread (a pinned writer) cannot kill
// it by accident. Linux only for the death signal; elsewhere a child
// outlives a parent that dies without Kill.
package child
