package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// Live hash-slot moves under the clients' writes. The slot-move fault moves
// the hash slot of one of the clients' business keys (or of a channel) out
// of its group while the clients keep writing to it: a migration to another
// group, a split of that slot into a new group, or the merge of a group that
// an earlier split made back into another. Half of the time the controller
// leader is then taken away (restarted or cut off) in the middle of the
// move. The histories the clients record across the move are checked like
// every other: linearizable, nothing acknowledged lost, nothing applied
// twice (the idempotent retries of writes refused while the slot was fenced
// included). At the end every slot-moving task must end: failed migrations
// (a phase timed out under faults and the move aborted, the source keeping
// the slot) are asked for again, which starts them over; and every group a
// split made is merged back.

// slotMoveLog is what the schedule did with hash-slot moves.
type slotMoveLog struct {
	migrations, splits, merges, refused int // started, and requests not accepted
	resumed, done, failed, aborted      int // at the end: asked again, succeeded, failed splits or merges, migrations that needed more than one attempt
}

// slotMoveTask returns the oldest hash-slot moving task with one of the statuses.
func slotMoveTask(st *controller.State, statuses ...slotstore.TaskStatus) (controller.Task, bool) {
	for _, id := range slices.Sorted(maps.Keys(st.Tasks)) {
		t := st.Tasks[id]
		if controller.MovesSlots(t.Kind) && slices.Contains(statuses, t.Status) {
			return *t, true
		}
	}
	return controller.Task{}, false
}

// injectSlotMove starts a hash-slot move of a slot the clients write to.
func injectSlotMove(f *faultEnv) (string, func()) {
	st := f.tc.ctrlState()
	sl := &f.moves.slots
	if t, ok := slotMoveTask(st, controller.TaskRunning, controller.TaskCancelling); ok {
		return loseControllerLeader(f, t.API(), fmt.Sprintf("%s g%d→g%d running (task %d, %s)", t.Kind, t.Group, t.ToGroup, t.ID, t.Phase))
	}
	keys := append(append([]string(nil), kvKeys...), subChannels...)
	hs := slotstore.HashSlotOfString(keys[f.rng.Intn(len(keys))])
	if len(st.HashToGroup) != slotstore.HashSlotCount {
		return "slot move: no routing table yet", nil
	}
	from := st.HashToGroup[hs]
	var others, made []slotstore.GroupID
	for _, g := range st.GroupIDs() {
		if g != from {
			others = append(others, g)
		}
		if int(g) > f.tc.groups && g != from {
			made = append(made, g) // made by a split: may be merged away
		}
	}
	via := f.tc.c.Nodes[f.rng.Intn(f.tc.size())]
	if l := f.tc.ctrlLeader(); l != 0 && f.rng.Intn(4) != 0 {
		via = f.tc.c.Nodes[l-1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var task slotstore.Task
	var err error
	var what string
	switch r := f.rng.Intn(4); {
	case r >= 2 && len(made) > 0:
		g := made[f.rng.Intn(len(made))]
		into := slotstore.GroupID(f.rng.Intn(f.tc.groups) + 1)
		what = fmt.Sprintf("merge g%d into g%d", g, into)
		task, err = via.Operator().CreateMerge(ctx, g, into)
		if err == nil {
			sl.merges++
		}
	case r >= 2 && len(st.Groups) < 6:
		what = fmt.Sprintf("split hash slot %d off g%d", hs, from)
		task, err = via.Operator().CreateSplit(ctx, from, []slotstore.HashSlot{hs}, nil)
		if err == nil {
			sl.splits++
		}
	default:
		if len(others) == 0 {
			return "slot move: one group only", nil
		}
		to := others[f.rng.Intn(len(others))]
		what = fmt.Sprintf("migrate hash slot %d g%d→g%d", hs, from, to)
		task, err = via.Operator().CreateSlotMigration(ctx, hs, to)
		if err == nil {
			sl.migrations++
		}
	}
	if err != nil {
		sl.refused++
		return fmt.Sprintf("%s refused (%v)", what, slotstore.ErrorCode(err)), nil
	}
	what = fmt.Sprintf("%s (task %d)", what, task.ID)
	if f.rng.Intn(2) == 0 {
		return what + " under the clients' writes", nil
	}
	return loseControllerLeader(f, task, what)
}

// settleSlotMoves runs once every fault is healed: every slot-moving task
// must end within the deadline; failed migrations are asked for again
// (an aborted move starts over); then every group a split made is merged
// back into group 1 (the final reads check that nothing was lost on the
// way). What does not end is a violation.
func settleSlotMoves(tc *testCluster, ml *moveLog) {
	waitSlotMoves(tc, ml)
	for _, g := range tc.ctrlState().GroupIDs() {
		if int(g) <= tc.groups {
			continue
		}
		// A retryable refusal (the controller between leaders right after
		// the last heal) is asked again, within a deadline.
		var err error
		testutil.Eventually(10*time.Second, 100*time.Millisecond, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err = tc.c.Nodes[int(g)%tc.size()].Operator().CreateMerge(ctx, g, 1)
			cancel()
			return err == nil || !slotstore.ErrorCode(err).Retryable(), ""
		})
		if slotstore.ErrorCode(err) == slotstore.CodeNotFound {
			if _, still := tc.ctrlState().Groups[g]; !still {
				continue // retired meanwhile (a split that moved nothing retires its new group)
			}
		}
		if err != nil {
			ml.violations = append(ml.violations, fmt.Sprintf("merging g%d back into g1 at the end refused: %v", g, err))
			continue
		}
		ml.slots.merges++
		waitSlotMoves(tc, ml)
	}
}

// waitSlotMoves waits until every slot-moving task has ended (see
// settleSlotMoves) and counts how they ended.
func waitSlotMoves(tc *testCluster, ml *moveLog) {
	sl := &ml.slots
	resumedAt := map[uint64]int{}
	var st *controller.State
	if _, ended := testutil.Eventually(60*time.Second, 100*time.Millisecond, func() (bool, string) {
		st = tc.ctrlState()
		open := 0
		for _, t := range st.Tasks {
			if !controller.MovesSlots(t.Kind) {
				continue
			}
			switch {
			case t.Status == controller.TaskRunning || t.Status == controller.TaskCancelling:
				open++
			case t.Status == controller.TaskFailed && t.Kind == controller.TaskSlotMigration:
				open++
				if resumedAt[t.ID] == t.Attempt {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := tc.c.Nodes[int(t.ID)%tc.size()].Operator().CreateSlotMigration(ctx, *t.HashSlot, t.ToGroup)
				cancel()
				if err == nil {
					resumedAt[t.ID] = t.Attempt
					sl.resumed++
				}
			}
		}
		return open == 0, ""
	}); !ended {
		for _, t := range st.Tasks {
			ended := t.Status == controller.TaskSucceeded || t.Status == controller.TaskCancelled ||
				t.Status == controller.TaskFailed && t.Kind != controller.TaskSlotMigration // a failed split or merge keeps what it moved
			if controller.MovesSlots(t.Kind) && !ended {
				ml.violations = append(ml.violations, fmt.Sprintf("task %d (%s g%d→g%d) did not end within 60s after the faults: %s/%s attempt %d: %s; %s; %s",
					t.ID, t.Kind, t.Group, t.ToGroup, t.Phase, t.Status, t.Attempt, t.Error, taskTrail(st, *t), tc.groupsNow(t.Group, t.ToGroup)))
			}
		}
		return
	}
	sl.done, sl.failed, sl.aborted = 0, 0, 0
	for _, t := range tc.ctrlState().Tasks {
		if !controller.MovesSlots(t.Kind) {
			continue
		}
		switch t.Status {
		case controller.TaskSucceeded:
			sl.done++
		case controller.TaskFailed:
			sl.failed++
		}
		if t.Attempt > 1 {
			sl.aborted++
		}
	}
}
