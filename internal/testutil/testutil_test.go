package testutil

import "testing"

// TestRetryCountsAttempts: Retry stops at the first true, and after
// attempts calls otherwise — however long the calls take.
func TestRetryCountsAttempts(t *testing.T) {
	for _, tc := range []struct {
		attempts, trueAt, wantCalls int
		want                        bool
	}{
		{3, 0, 3, false}, // never true: three calls
		{3, 2, 2, true},  // true on the second call
		{1, 0, 1, false}, // one attempt: no reread
		{3, 1, 1, true},
	} {
		calls := 0
		got := Retry(tc.attempts, 0, func() bool { calls++; return calls == tc.trueAt })
		if got != tc.want || calls != tc.wantCalls {
			t.Errorf("Retry(%d) true at call %d: %v after %d calls, want %v after %d", tc.attempts, tc.trueAt, got, calls, tc.want, tc.wantCalls)
		}
	}
}
