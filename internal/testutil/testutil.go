// Package testutil holds what tests across the repository share: loopback
// addresses that no other test of the process got, and waiting for a
// condition with a deadline (a wait for a condition, never a sleep and a
// hope).
//
// Concurrency contract: every function is safe for concurrent use; none
// owns a goroutine but SSEEvents', which ends with the stream it reads.
package testutil

import (
	"net"
	"sync"
	"testing"
	"time"
)

// handedOut holds every address FreeAddr returned in this process: the OS
// may hand a port it freed out again, and two nodes of one cluster then got
// the same Raft address (dragonboat panics "duplicated address").
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// FreeAddr returns a 127.0.0.1 address whose port the OS just handed out
// and that no earlier FreeAddr call of this process returned.
func FreeAddr(t testing.TB) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	t.Fatal("testutil: no fresh loopback port in 100 tries")
	return ""
}

// WaitUntil polls cond every poll until it holds, failing t with what
// after within.
func WaitUntil(t testing.TB, within, poll time.Duration, what string, cond func() bool) {
	t.Helper()
	WaitFor(t, within, poll, func() (bool, string) { return cond(), "waiting for " + what })
}

// WaitFor polls check every poll until it reports done, failing t after
// within with what check last said of the state it saw (so that a timeout
// says where things stood, not only that they did not get there).
func WaitFor(t testing.TB, within, poll time.Duration, check func() (done bool, state string)) {
	t.Helper()
	if state, ok := Eventually(within, poll, check); !ok {
		t.Fatalf("timed out after %v: %s", within, state)
	}
}

// Eventually polls check every poll until it reports done (true) or within
// passed (false), and returns what check last said of the state it saw: for
// a caller that does something of its own before failing (a screenshot, a
// dump of the cluster), or that goes on either way.
func Eventually(within, poll time.Duration, check func() (done bool, state string)) (string, bool) {
	deadline := time.Now().Add(within)
	for {
		done, state := check()
		if done {
			return state, true
		}
		if time.Now().After(deadline) {
			return state, false
		}
		time.Sleep(poll)
	}
}

// Retry calls check up to attempts times, pause apart, until it reports
// true, and says whether it did: for a check whose every call takes a
// while of its own (bounded by its own deadlines), where a number of
// attempts, not a deadline, says how hard to try.
func Retry(attempts int, pause time.Duration, check func() bool) bool {
	for i := 0; ; i++ {
		if check() {
			return true
		}
		if i+1 >= attempts {
			return false
		}
		time.Sleep(pause)
	}
}
