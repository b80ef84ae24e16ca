package leader

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/checks"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// State checks (issue 52): the controller leader checks each group's
// replicas against each other — in the background, every group at least
// once per CheckEvery, one group at a time, and when an operator asks.
// A check proposes meta.CheckState through the group, so every replica
// hashes its state at that entry's index (package checks), then asks each
// replica's node for its digest and compares them. A minority — replicas
// whose digest differs from one held by a majority — is fenced at once: its
// node stops it and reports it failed, and the balancer rebuilds it from
// the majority by moving it off. With no majority nothing is chosen; the
// operator is told (the decision log, the group's view, the metrics).
//
// The last check of each group is kept here, on the controller leader, and
// shown in the group's view; a new controller leader starts with none and
// checks every group within CheckEvery.

// DefaultCheckEvery is how often each group is checked by default.
const DefaultCheckEvery = time.Hour

// CheckHost is what checks need of the node beyond Host: a node's digest
// for a check (its own or a peer's), and fencing a node's replica.
type CheckHost interface {
	ReplicaDigest(ctx context.Context, node slotstore.NodeID, g slotstore.GroupID, id uint64) (slotstore.ReplicaDigest, error)
	FenceReplica(ctx context.Context, node slotstore.NodeID, g slotstore.GroupID, replica uint64, reason string) error
}

// checkBook is the leader's record of checks: the last of each group, and
// the background check running (at most one).
type checkBook struct {
	mu      sync.Mutex
	last    map[slotstore.GroupID]slotstore.GroupCheck
	epochs  map[slotstore.GroupID]uint64    // each group's config epoch when its last check began
	started map[slotstore.GroupID]time.Time // when the latest check of a group began
	next    time.Time                       // no background check starts before
	running bool
	wg      sync.WaitGroup // the background check's goroutine
}

// CheckGroup checks g's replicas now and returns what it found (asked of
// the controller leader when this node does not lead).
func (l *Leader) CheckGroup(ctx context.Context, g slotstore.GroupID) (slotstore.GroupCheck, error) {
	if !l.Leads() {
		// Refused here, before asking the leader (check refuses on the
		// leader): in a mixed cluster it may run a release that has no
		// such peer call.
		if err := l.cfg.Host.Controller().Allows(clusterversion.StateChecks); err != nil {
			return slotstore.GroupCheck{}, err
		}
		return askWith[slotstore.GroupCheck](ctx, l, http.MethodPost, "check?group="+strconv.FormatUint(uint64(g), 10), nil)
	}
	return l.check(ctx, g)
}

// LastChecks are the groups' last checks, by group.
func (l *Leader) LastChecks() map[slotstore.GroupID]slotstore.GroupCheck {
	l.checks.mu.Lock()
	defer l.checks.mu.Unlock()
	out := make(map[slotstore.GroupID]slotstore.GroupCheck, len(l.checks.last))
	for g, c := range l.checks.last {
		out[g] = c
	}
	return out
}

func (l *Leader) serveCheck(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	g, err := strconv.ParseUint(r.URL.Query().Get("group"), 10, 32)
	if err != nil {
		peer.WriteError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "check request"))
		return
	}
	if !l.Leads() {
		peer.WriteError(w, http.StatusServiceUnavailable, l.notLeader())
		return
	}
	c, err := l.check(ctx, slotstore.GroupID(g))
	if err != nil {
		peer.WriteError(w, peer.StatusOf(err), err)
		return
	}
	peer.WriteJSON(w, c)
}

// check runs one check of g on the controller leader.
func (l *Leader) check(ctx context.Context, g slotstore.GroupID) (slotstore.GroupCheck, error) {
	host := l.cfg.Checks
	if host == nil {
		return slotstore.GroupCheck{}, slotstore.Errorf(slotstore.CodeFailedPrecondition, "this node runs no state checks")
	}
	st := l.cfg.Host.Controller()
	grp, ok := st.Groups[g]
	if !ok {
		return slotstore.GroupCheck{}, slotstore.Errorf(slotstore.CodeNotFound, "group %d does not exist", g)
	}
	// A replica of an older release refuses CheckState, and the fence
	// that may follow is a command it does not know.
	if err := st.Allows(clusterversion.StateChecks); err != nil {
		return slotstore.GroupCheck{}, err
	}
	start := l.cfg.Now()
	l.checks.mu.Lock()
	l.checks.started[g] = start
	l.checks.epochs[g] = grp.ConfigEpoch
	l.checks.mu.Unlock()
	id := uint64(rand.Int64N(1<<53-1)) + 1 // never 0; exact in JSON numbers (53 bits)
	res, err := l.proposeCheck(ctx, g, id)
	if err != nil {
		return slotstore.GroupCheck{}, fmt.Errorf("propose the check of group %d: %w", g, err)
	}
	nodes := slices.Sorted(func(yield func(slotstore.NodeID) bool) {
		for n := range grp.Peers {
			if !yield(n) {
				return
			}
		}
	})
	answers := make([]checks.Answer, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		// The replica the node runs: a node being rebuilt in place runs
		// its new one before the move's commit names it.
		rid := grp.Peers[n]
		if want, r, _ := st.Wants(n, g); want {
			rid = r
		}
		answers[i] = checks.Answer{Node: n, ReplicaID: rid}
		wg.Go(func() {
			answers[i].Digest, answers[i].Err = host.ReplicaDigest(ctx, n, g, id)
		})
	}
	wg.Wait()
	c := checks.Compare(g, id, answers)
	if c.Index == 0 && len(res.Value) == 8 {
		c.Index = binary.BigEndian.Uint64(res.Value)
	}
	c.AtMs, c.TookMs = start.UnixMilli(), l.cfg.Now().Sub(start).Milliseconds()
	l.act(ctx, &c, answers)
	l.checks.mu.Lock()
	l.checks.last[g] = c
	l.checks.mu.Unlock()
	return c, nil
}

// proposeCheck proposes check id through g, again after a refusal that is
// retryable (a leader change: not_leader, route_not_ready) while ctx lasts,
// waiting twice as long each time from 20 ms to at most a second. Proposing
// a check twice is harmless: replicas keep the first under its id.
func (l *Leader) proposeCheck(ctx context.Context, g slotstore.GroupID, id uint64) (meta.Result, error) {
	wait := 20 * time.Millisecond
	for {
		res, err := l.cfg.Host.ProposeToGroup(ctx, g, &meta.CheckState{ID: id})
		if err == nil {
			err = res.Err()
		}
		if err == nil || !slotstore.ErrorCode(err).Retryable() {
			return res, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// act fences a check's minority and records an alarming check as a
// decision.
func (l *Leader) act(ctx context.Context, c *slotstore.GroupCheck, answers []checks.Answer) {
	what := checks.Describe(*c)
	switch c.Verdict {
	case slotstore.CheckDiverged:
		var failed []error
		for _, a := range answers {
			if !slices.Contains(c.Minority, a.Node) {
				continue
			}
			err := l.cfg.Checks.FenceReplica(ctx, a.Node, c.Group, a.ReplicaID,
				fmt.Sprintf("check %x at index %d: differs from the majority in hash slots %v", c.CheckID, c.Index, c.Differing))
			if err != nil {
				failed = append(failed, fmt.Errorf("node %d: %w", a.Node, err))
				continue
			}
			c.Fenced = append(c.Fenced, a.Node)
		}
		c.Action = "the minority is fenced (stopped, reported failed); the balancer rebuilds it from the majority"
		if len(failed) > 0 {
			c.Action = "fencing the minority failed: " + errors.Join(failed...).Error() + "; the next check tries again"
		}
	case slotstore.CheckNoMajority:
		c.Action = "no majority: the group's reads are fenced, nothing is rebuilt automatically; rebuild the wrong replicas from the right one and check again (runbook)"
		if _, err := l.cfg.Host.Propose(ctx, controller.Command{FenceReads: &controller.FenceReads{Group: c.Group, CheckID: c.CheckID, Reason: what}}); err != nil {
			c.Action = "no majority, and fencing the group's reads failed: " + err.Error() + "; the next check tries again"
		}
	case slotstore.CheckConsistent:
		if l.cfg.Host.Controller().ReadsFenced(c.Group) != nil {
			if _, err := l.cfg.Host.Propose(ctx, controller.Command{LiftReadFence: &controller.LiftReadFence{Group: c.Group, CheckID: c.CheckID}}); err != nil {
				c.Action = "every replica agrees, but lifting the read fence failed: " + err.Error()
			} else {
				c.Action = "every replica agrees: the group's read fence is lifted"
			}
			l.cfg.Logger.Warn("state check: replicas agree again; read fence lifted", "group", c.Group, "check", c.CheckID, "action", c.Action)
		}
		return
	default:
		return
	}
	l.cfg.Logger.Error("state check: replicas diverged", "group", c.Group, "check", c.CheckID, "index", c.Index,
		"differing", c.Differing, "minority", c.Minority, "fenced", c.Fenced, "action", c.Action)
	l.record(slotstore.Decision{AtMs: c.AtMs, Group: c.Group, Kind: slotstore.DecisionCheck, Reason: slotstore.Reason(c.Verdict),
		Detail: what + "; " + c.Action, Leader: l.cfg.NodeID, Observer: l.cfg.NodeID})
}

// checkInBackground starts the check of the group most overdue, when one
// is due and none runs (a Round's step; the check runs on its own
// goroutine, bounded by CheckTimeout and the node's life).
func (l *Leader) checkInBackground(now time.Time) {
	every := l.cfg.CheckEvery
	if every < 0 || l.cfg.Checks == nil {
		return
	}
	every = max(every, time.Second)
	st := l.cfg.Host.Controller()
	ids := st.GroupIDs()
	if len(ids) == 0 || st.Allows(clusterversion.StateChecks) != nil {
		return
	}
	b := &l.checks
	b.mu.Lock()
	defer b.mu.Unlock()
	spacing := every / time.Duration(len(ids))
	if b.next.IsZero() {
		// The first after taking the lead comes one spacing later: the
		// groups' leaders settle first, and a short-lived leadership
		// proposes nothing.
		b.next = now.Add(spacing)
		return
	}
	if b.running {
		return
	}
	// A group whose last check found a divergence and whose replicas
	// changed since (the minority rebuilt) is checked again at once: the
	// alarm ends with a clean check, not an hour later.
	due, ok := b.recheck(l.cfg.Host.Controller())
	if !ok {
		if now.Before(b.next) {
			return
		}
		if due, ok = b.oldest(ids, now, every); !ok {
			return
		}
	}
	// Spread over the period: one group every every/len(ids).
	b.next = now.Add(spacing)
	b.running = true
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(l.cfg.Life, l.cfg.CheckTimeout)
		defer cancel()
		if _, err := l.check(ctx, due); err != nil {
			l.cfg.Logger.Warn("background state check failed", "group", due, "err", err)
		}
		b.mu.Lock()
		b.running = false
		b.mu.Unlock()
	}()
}

// stepDown forgets when the next background check is due: a node that
// leads again waits one spacing first.
func (b *checkBook) stepDown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next = time.Time{}
}

// recheck is a group whose last check found a divergence and whose
// replicas changed since. b.mu is held.
func (b *checkBook) recheck(st *controller.State) (slotstore.GroupID, bool) {
	for g, c := range b.last {
		if grp, ok := st.Groups[g]; ok && c.Verdict.Alarming() && grp.ConfigEpoch != b.epochs[g] {
			return g, true
		}
	}
	return 0, false
}

// oldest is the group of ids checked longest ago (never, first), if that
// was every or more before now. b.mu is held.
func (b *checkBook) oldest(ids []slotstore.GroupID, now time.Time, every time.Duration) (slotstore.GroupID, bool) {
	var due slotstore.GroupID
	var at time.Time
	for _, g := range ids {
		if t := b.started[g]; due == 0 || t.Before(at) {
			due, at = g, t
		}
	}
	return due, at.IsZero() || now.Sub(at) >= every
}
