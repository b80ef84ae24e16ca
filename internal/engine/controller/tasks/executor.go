package tasks

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Node is what the executor needs of the node it runs on (the controller
// leader).
type Node interface {
	// Controller is the node's copy of the controller state.
	Controller() *controller.State
	// Membership performs a membership operation where a replica of the
	// group lives (idempotent: an effect already present does nothing).
	Membership(ctx context.Context, req MembershipRequest) (Membership, error)
	// Observe collects fresh status reports; Group is a group's view.
	Observe(ctx context.Context)
	Group(ctx context.Context, g slotstore.GroupID) (slotstore.GroupView, error)
	// GroupLeader is g's live leader as the node sees it (0: none).
	GroupLeader(g slotstore.GroupID) slotstore.NodeID
	// Transfer moves g's leadership to target (checked, on the leader).
	Transfer(ctx context.Context, v slotstore.GroupView, target slotstore.NodeID) error
	// Advance replicates a task's step; Record appends a decision.
	Advance(ctx context.Context, a controller.AdvanceTask) error
	Record(d slotstore.Decision)
	// ProposeToGroup replicates cmd through group g itself; the Reader
	// answers a query from the group owning its hash slot (read through
	// meta.Read, typed).
	ProposeToGroup(ctx context.Context, g slotstore.GroupID, cmd meta.Command) (meta.Result, error)
	meta.Reader
	// RetireGroup removes an empty group from the controller state (a
	// group already retired is no error).
	RetireGroup(ctx context.Context, g slotstore.GroupID) error
	// WakeLeader wakes g's replica on its leader's node, should the group
	// be quiesced (never waits; a no-op when nothing is quiesced).
	WakeLeader(g slotstore.GroupID, leader slotstore.NodeID)
}

// Config tunes an executor.
type Config struct {
	Node           Node
	PhaseTimeout   time.Duration // a phase stuck this long fails its task (but past a point of no return: doc.go)
	ActiveWithin   time.Duration // a learner's report must be this fresh to be caught up
	MaxLag         uint64        // a learner this close to the leader is caught up
	RequestTimeout time.Duration // of a leader handoff
	Now            func() time.Time
	Logger         *slog.Logger
}

// Executor carries out the controller's tasks, one step per round.
type Executor struct {
	cfg Config

	mu        sync.Mutex
	stuckOnce map[uint64]string      // task → the phase whose being stuck was recorded
	learners  map[uint64]learnerMark // task → its learner's log as last seen (replicamove.go)
}

// New returns an executor.
func New(cfg Config) *Executor {
	return &Executor{cfg: cfg, stuckOnce: map[uint64]string{}, learners: map[uint64]learnerMark{}}
}

// stuck records, once per task phase and attempt, that t is stuck past the
// phase timeout in a phase it cannot fail or abort from — it is retried
// until it completes — with the error that holds it: the decision log then
// says why a task does not end, where a failed task would say so itself.
func (e *Executor) stuck(t controller.Task, err error) {
	slot := -1
	if t.HashSlot != nil {
		slot = int(*t.HashSlot)
	}
	key := fmt.Sprintf("%s/%d/%d", t.Phase, slot, t.Attempt)
	e.mu.Lock()
	seen := e.stuckOnce[t.ID] == key
	e.stuckOnce[t.ID] = key
	forgetEnded(e, e.stuckOnce)
	e.mu.Unlock()
	if !seen {
		e.cfg.Node.Record(slotstore.Decision{Group: t.Group, Kind: slotstore.DecisionTask,
			Reason: slotstore.Reason(string(t.Kind) + ":" + string(t.Phase) + "→stuck"),
			Detail: fmt.Sprintf("task %d stuck in phase %s for more than %v, retried until it completes: %v", t.ID, t.Phase, e.cfg.PhaseTimeout, err)})
	}
}

// forgetEnded drops the entries of tasks that no longer run from m (its
// caller holds mu): the executor's memories are bounded by the tasks that
// run.
func forgetEnded[V any](e *Executor, m map[uint64]V) {
	for id := range m {
		if cur, ok := e.cfg.Node.Controller().Tasks[id]; !ok || cur.Status != controller.TaskRunning && cur.Status != controller.TaskCancelling {
			delete(m, id)
		}
	}
}

// Once runs one step of every running task of st.
func (e *Executor) Once(ctx context.Context, tasks []controller.Task) {
	for _, t := range tasks {
		if t.Status != controller.TaskRunning && t.Status != controller.TaskCancelling {
			continue
		}
		if err := e.step(ctx, t); err != nil {
			e.cfg.Logger.Warn("task step", "task", t.ID, "phase", t.Phase, "err", err)
		}
	}
}

// Drive runs steps of every running task until each is blocked — a step
// that fails, or that leaves the task as it was (a phase still waiting) —
// taking at most maxSteps steps of each, so that a task whose phases
// complete at once (a slot migration's, a split's slot after slot) does not
// wait a round per phase. Tasks are re-read from the node's controller
// state after every step (an advance is applied there before it returns).
func (e *Executor) Drive(ctx context.Context, maxSteps int) {
	st := e.cfg.Node.Controller()
	for _, id := range st.TaskIDs() {
		for range maxSteps {
			cur, ok := e.cfg.Node.Controller().Tasks[id]
			if !ok || cur.Status != controller.TaskRunning && cur.Status != controller.TaskCancelling || ctx.Err() != nil {
				break
			}
			before := progress(cur)
			if err := e.step(ctx, *cur); err != nil {
				e.cfg.Logger.Warn("task step", "task", cur.ID, "phase", cur.Phase, "err", err)
				break
			}
			if after, ok := e.cfg.Node.Controller().Tasks[id]; !ok || progress(after) == before {
				break
			}
		}
	}
}

// progress is what a step that did something changes.
func progress(t *controller.Task) string {
	slot := -1
	if t.HashSlot != nil {
		slot = int(*t.HashSlot)
	}
	return fmt.Sprintf("%s/%s/%d/%d/%d/%x", t.Phase, t.Status, slot, t.Moved, len(t.History), t.CopiedTo)
}

// advance replicates a step of task t (to phase, or ending it with status)
// and records the decision that says so.
func (e *Executor) advance(ctx context.Context, t controller.Task, phase slotstore.TaskPhase, status slotstore.TaskStatus, errMsg string, obs *controller.PhaseRecord) error {
	return e.advanceTask(ctx, t, controller.AdvanceTask{
		ID: t.ID, ExpectedPhase: t.Phase, Phase: phase, Status: status, Error: errMsg, Observed: obs, HashSlot: t.HashSlot})
}

// advanceTask replicates step a of task t and records the decision that
// says so.
func (e *Executor) advanceTask(ctx context.Context, t controller.Task, a controller.AdvanceTask) error {
	phase, status, errMsg := a.Phase, a.Status, a.Error
	err := e.cfg.Node.Advance(ctx, a)
	if err == nil {
		what := fmt.Sprintf("%s node %d→%d", t.Kind, t.From, t.To)
		if t.Kind == controller.TaskGroupCreate {
			what = fmt.Sprintf("%s of group %d", t.Kind, t.Group)
		}
		if t.HashSlot != nil {
			what = fmt.Sprintf("%s of hash slot %d, group %d→%d", t.Kind, *t.HashSlot, t.Group, t.ToGroup)
		} else if t.Kind == controller.TaskGroupSplit || t.Kind == controller.TaskGroupMerge {
			what = fmt.Sprintf("%s, group %d→%d", t.Kind, t.Group, t.ToGroup)
		}
		e.cfg.Node.Record(slotstore.Decision{Group: t.Group, Kind: slotstore.DecisionTask, Reason: slotstore.Reason(string(t.Kind) + ":" + string(t.Phase) + "→" + firstNonEmpty(string(phase), string(status))),
			Detail: fmt.Sprintf("task %d (%s) %s", t.ID, what, firstNonEmpty(errMsg, "ok"))})
	}
	return err
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// step does one step of t and advances it, or fails it after the phase has
// been stuck for PhaseTimeout.
func (e *Executor) step(ctx context.Context, t controller.Task) error {
	var err error
	switch t.Kind {
	case controller.TaskSlotMigration, controller.TaskGroupSplit, controller.TaskGroupMerge:
		err = e.slotStep(ctx, t)
	case controller.TaskGroupCreate:
		err = e.groupStep(ctx, t)
	default:
		err = e.moveStep(ctx, t)
	}
	if err == nil {
		return nil
	}
	if cur := e.cfg.Node.Controller().Tasks[t.ID]; cur != nil && cur.Phase == t.Phase {
		// The phase's clock as the step left it: a step that recorded
		// progress (rows copied) and then failed restarted it.
		t.UpdatedAtMs = max(t.UpdatedAtMs, cur.UpdatedAtMs)
	}
	stuck := e.cfg.Now().Sub(time.UnixMilli(t.UpdatedAtMs))
	if stuck > e.cfg.PhaseTimeout && t.Kind == controller.TaskReplicaMove && controller.PastCancelling(&t) {
		// Past the point of no return (the point of cancelling,
		// controller.PastCancelling): the new replica is a voter, and the
		// old one is being removed (remove_old: whether a removal that
		// timed out was applied is unknown) or gone (commit: only the
		// desired peers are left to commit). Failing here would leave the
		// desired peers and the membership apart — and free the group for
		// a split or another move planned from the wrong peers (chaos found
		// a split started so, which never ended) — until someone asked for
		// the same move again; it is retried until it completes.
		e.stuck(t, err)
		return fmt.Errorf("phase %s stuck for %v, retried until it completes (the membership changes already): %w",
			t.Phase, stuck.Round(time.Millisecond), err)
	}
	if stuck > e.cfg.PhaseTimeout && handingOver(t) {
		// Past the point of no return of a slot's move: the target may own
		// the slot already (acquire's outcome can be unknown) while the
		// source holds it fenced, so neither side can be undone. Failing
		// here would leave the slot fenced at the source, with nobody to
		// release or switch it, until someone asked for the same move again
		// (chaos found it: a release whose source leader was cut off for
		// longer than the timeout). Acquire, release and switch are
		// idempotent; they are retried until the source and target answer.
		e.stuck(t, err)
		return fmt.Errorf("phase %s stuck for %v, retried until it completes (hash slot %d is being handed over): %w",
			t.Phase, stuck.Round(time.Millisecond), *t.HashSlot, err)
	}
	if stuck > e.cfg.PhaseTimeout {
		reason := fmt.Sprintf("phase %s did not complete within %v: %v", t.Phase, e.cfg.PhaseTimeout, err)
		if t.HashSlot != nil && t.Status == controller.TaskRunning && t.Phase != controller.PhaseStart &&
			controller.PhaseIndex(&t, t.Phase) < controller.PhaseIndex(&t, controller.PhaseAcquire) {
			// A slot move that does not finish in time aborts: the source
			// keeps the slot, unfenced (asking again starts it over).
			m := slotMove{e: e, t: t, hdr: meta.Header{HashSlot: *t.HashSlot}}
			if uerr := m.undoSource(ctx); uerr != nil {
				uerr = fmt.Errorf("%s; aborting it: %w", reason, uerr)
				e.stuck(t, uerr)
				return uerr
			}
			reason = "aborted, the source keeps the slot: " + reason
			if uerr := m.cmd(ctx, t.ToGroup, &meta.DropImported{Header: m.hdr}); uerr != nil {
				reason += fmt.Sprintf(" (the rows copied to group %d stay until the move is asked again: %v)", t.ToGroup, uerr)
			}
		}
		return e.advance(ctx, t, "", controller.TaskFailed, reason, nil)
	}
	return err
}

// handingOver reports a slot-moving task in its slot's handover — acquire,
// release or switch — which, once begun, only goes forward.
func handingOver(t controller.Task) bool {
	if !controller.MovesSlots(t.Kind) || t.HashSlot == nil || t.Status != controller.TaskRunning {
		return false
	}
	switch t.Phase {
	case controller.PhaseAcquire, controller.PhaseRelease, controller.PhaseSwitch:
		return true
	}
	return false
}
