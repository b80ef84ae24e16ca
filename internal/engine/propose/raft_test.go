package propose

import (
	"fmt"
	"testing"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestRaftErrorSaysWhetherAWriteMayHaveApplied: the dispatcher resends a
// write only on route_not_ready and not_leader (not proposed); an error
// dragonboat also gives a proposal that was already queued — its replica
// stopped, the caller's context cancelled — must say timeout (the outcome
// is open) for a write, or the resend applies it twice. A read may say
// route_not_ready: reading again is harmless.
func TestRaftErrorSaysWhetherAWriteMayHaveApplied(t *testing.T) {
	for _, c := range []struct {
		err         error
		write, read slotstore.Code
	}{
		{dragonboat.ErrShardClosed, slotstore.CodeTimeout, slotstore.CodeRouteNotReady},
		{dragonboat.ErrClosed, slotstore.CodeTimeout, slotstore.CodeRouteNotReady},
		{dragonboat.ErrCanceled, slotstore.CodeTimeout, slotstore.CodeTimeout},
		{dragonboat.ErrTimeout, slotstore.CodeTimeout, slotstore.CodeTimeout},
		{dragonboat.ErrShardNotFound, slotstore.CodeRouteNotReady, slotstore.CodeRouteNotReady},
		{dragonboat.ErrShardNotReady, slotstore.CodeRouteNotReady, slotstore.CodeRouteNotReady},
		{dragonboat.ErrSystemBusy, slotstore.CodeBusy, slotstore.CodeBusy},
		{fmt.Errorf("wrapped: %w", dragonboat.ErrShardClosed), slotstore.CodeTimeout, slotstore.CodeRouteNotReady},
	} {
		if got := slotstore.ErrorCode(RaftError(c.err, 1, true)); got != c.write {
			t.Errorf("write, %v: %s, want %s", c.err, got, c.write)
		}
		if got := slotstore.ErrorCode(RaftError(c.err, 1, false)); got != c.read {
			t.Errorf("read, %v: %s, want %s", c.err, got, c.read)
		}
	}
}
