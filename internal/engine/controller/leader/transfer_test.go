package leader

import (
	"context"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestATransferRefusedForNowSaysWhenToRetry (issue 49): a transfer the
// group leader's node refuses before Raft is asked (leadership already
// moving) is no failed transfer — it starts no back-off; a failed one
// does. A transfer asked during the back-off, or while another of the
// group runs, is refused retryable (busy) with the time to wait, not as a
// conflict no retry helps; one blocked by anything else stays a conflict.
func TestATransferRefusedForNowSaysWhenToRetry(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	host := bootstrappedHost(t, clock)
	leadership := policy.Leadership{}
	leadership.EnsureDefaults()
	l := New(Config{NodeID: 1, Host: host, Peers: noPeers{}, Now: clock, Life: context.Background(), ObserveInterval: -1,
		RequestTimeout: time.Second, UnreachableAfter: 3 * time.Second, Leadership: leadership})
	ctx := context.Background()
	v := transferableView(now) // led here, by node 1

	host.transferErr = &slotstore.Error{Code: slotstore.CodeNotLeader, Message: "node 1 does not lead group 1: the leader transfers"}
	if _, err := l.execute(ctx, v, 2); slotstore.ErrorCode(err) != slotstore.CodeNotLeader {
		t.Fatalf("a transfer the leader's node refused: %v", err)
	}
	if b := l.backoff.State(1); b.Failures != 0 || !b.Until.IsZero() {
		t.Fatalf("a refusal counted as a failed transfer: %+v", b)
	}
	host.transferErr = &slotstore.Error{Code: slotstore.CodeTimeout, Message: "the target did not take over in time"}
	if _, err := l.execute(ctx, v, 2); slotstore.ErrorCode(err) != slotstore.CodeTimeout {
		t.Fatalf("a failed transfer: %v", err)
	}
	f := l.facts(1, 2, now)
	if f.Backoff.Failures != 1 || !f.Backoff.Until.After(now) {
		t.Fatalf("a failed transfer started no back-off: %+v", f.Backoff)
	}

	refused := func(pf slotstore.Preflight, f policy.Facts) *slotstore.Error {
		t.Helper()
		e, ok := l.refusal(1, pf, f).(*slotstore.Error)
		if !ok {
			t.Fatal("not a slotstore.Error")
		}
		return e
	}
	backoff := slotstore.Blocker{Reason: policy.ReasonTransferBackoff, Detail: "1 failed transfer(s) of group 1 in a row"}
	e := refused(slotstore.Preflight{Blockers: []slotstore.Blocker{backoff}}, f)
	if e.Code != slotstore.CodeBusy || !e.Code.Retryable() || e.RetryAfter != f.Backoff.Until.Sub(now) ||
		len(e.Details) != 1 || e.Details[0].Field != string(policy.ReasonTransferBackoff) {
		t.Fatalf("refused during the back-off: %#v", e)
	}
	l.transfers.Store(slotstore.GroupID(1), now.Add(-time.Second)) // another transfer of group 1 runs
	inFlight := slotstore.Blocker{Reason: policy.ReasonTransferInFlight, Detail: "a leader transfer of group 1 is in flight"}
	if e := refused(slotstore.Preflight{Blockers: []slotstore.Blocker{inFlight}}, policy.Facts{Now: now}); e.Code != slotstore.CodeBusy ||
		e.RetryAfter != leadership.TransferCooldown-time.Second {
		t.Fatalf("refused while another transfer runs: %#v", e)
	}
	lagging := slotstore.Blocker{Reason: policy.ReasonTargetLagging, Detail: "node 2 is 100 entries behind"}
	if e := refused(slotstore.Preflight{Blockers: []slotstore.Blocker{lagging, inFlight}}, f); e.Code != slotstore.CodeConflict || len(e.Details) != 2 {
		t.Fatalf("refused as unsafe: %#v", e)
	}
}
