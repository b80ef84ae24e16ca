package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// stateChecks is what the state checks after a schedule found (issue 52):
// every group's replicas hashed at one Raft index and compared. Any
// verdict but "consistent" — replicas that differ, or one that did not
// answer once the cluster settled — fails the schedule.
type stateChecks struct {
	groups     int
	violations []string
}

// checkStates checks every group through n, each again after a retryable
// refusal (a leader moving) for up to 30 s.
func checkStates(n *cluster.Node) stateChecks {
	var out stateChecks
	for _, g := range n.Controller().GroupIDs() {
		var got slotstore.GroupCheck
		var err error
		testutil.Eventually(30*time.Second, 200*time.Millisecond, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err = n.Operator().Recovery().CheckGroup(ctx, g)
			settled := err == nil && got.Verdict != slotstore.CheckIncomplete
			return settled || err != nil && !slotstore.ErrorCode(err).Retryable(), ""
		})
		out.groups++
		switch {
		case err != nil:
			out.violations = append(out.violations, fmt.Sprintf("group %d: no check: %v", g, err))
		case got.Verdict != slotstore.CheckConsistent:
			out.violations = append(out.violations, fmt.Sprintf("group %d: %s at index %d: differing %v, minority %v, replicas %+v",
				g, got.Verdict, got.Index, got.Differing, got.Minority, got.Replicas))
		}
	}
	return out
}
