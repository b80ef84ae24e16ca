package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// Availability around leader changes: a transfer Raft cannot finish must
// not refuse writes, the gates must not start one toward a replica the
// leader does not hear, and a forward stuck with a leader that was cut off
// must end as soon as the new leader is known.

// writeLoop writes fresh keys of faultGroup through n until stop closes,
// and returns the errors and the longest a write took. idem gives every
// write an Idempotency-Key.
func writeLoop(w *writes, n *cluster.Node, idem bool, timeout time.Duration, stop <-chan struct{}) (errs []error, longest time.Duration, ok int) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return errs, longest, ok
		default:
		}
		k := w.key()
		cmd := &meta.PutKV{Key: k, Value: []byte(k)}
		if idem {
			cmd.IdempotencyKey = "idem-" + k
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		start := time.Now()
		res, _, err := n.Propose(ctx, cmd)
		took := time.Since(start)
		cancel()
		longest = max(longest, took)
		if err == nil && !res.OK() {
			err = res.Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("write %d (%s) after %v: %w", i, k, took.Round(time.Millisecond), err))
			time.Sleep(10 * time.Millisecond) // a refusal is instant: do not spin
			continue
		}
		ok++
		w.mu.Lock()
		w.acked = append(w.acked, k)
		w.mu.Unlock()
	}
}

// TestWritesWaitOutATransferRaftCannotFinish: while a leader transfer is
// pending dragonboat drops every proposal (before appending it). A transfer
// toward a replica that is cut off stays pending for an election timeout;
// the proposer proposes the dropped entries again, so no write is refused.
func TestWritesWaitOutATransferRaftCannotFinish(t *testing.T) {
	c, w, leader := faultStart(t)
	ln := c.Nodes[leader-1]
	target := others(c, leader)[0].NodeID()
	c.Net.Isolate(target)

	stop := make(chan struct{})
	var bg sync.WaitGroup
	type result struct {
		errs []error
		ok   int
	}
	results := make(chan result, 2)
	for range 2 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			errs, _, ok := writeLoop(w, ln, false, 5*time.Second, stop)
			results <- result{errs, ok}
		}()
	}
	before := ln.Stats().DroppedProposals
	for range 3 { // each attempt stays pending for an election timeout
		time.Sleep(150 * time.Millisecond) // a hold: writes flow between the transfers
		if err := ln.RawLeaderTransfer(faultGroup, target); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(400 * time.Millisecond) // a hold: writes under the last pending transfer
	close(stop)
	bg.Wait()
	close(results)
	total := 0
	for r := range results {
		total += r.ok
		for _, err := range r.errs {
			t.Errorf("a write was refused while a transfer was pending: %v", err)
		}
	}
	drops := ln.Stats().DroppedProposals - before
	if drops == 0 {
		t.Fatal("no proposal was dropped: the pending transfer did not happen, the test proves nothing")
	}
	if l := leaderOf(ln); l != leader {
		t.Fatalf("leadership moved to node %d, toward a cut-off replica?", l)
	}
	t.Logf("%d writes acknowledged while 3 transfers toward a cut-off replica were pending; %d dropped entries proposed again", total, drops)
	c.Net.Heal()
	w.verify(c, 10*time.Second)
}

// TestTransfersUnderLoadLandAtOnce: with writes coming in through every
// node, leadership is moved back and forth. dragonboat lets no replica
// campaign while it has committed entries it has not applied, so a transfer
// toward a target a few entries behind (always, under load) used to miss:
// Raft then dropped the group's proposals for an election timeout, and
// transfers took 0.5–3 s. The leader now holds its proposer until the
// target has applied its whole log: every transfer lands at its first
// attempt, no proposal is dropped and no write fails.
func TestTransfersUnderLoadLandAtOnce(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 1, RTT: 50 * time.Millisecond,
		Tune: func(cfg *cluster.Config) { cfg.ObserveInterval = -1 }})
	w := newWrites(t, c)
	stop := make(chan struct{})
	var bg sync.WaitGroup
	errs := make(chan []error, len(c.Nodes))
	for _, n := range c.Nodes {
		bg.Add(1)
		go func() {
			defer bg.Done()
			e, _, _ := writeLoop(w, n, false, 5*time.Second, stop)
			errs <- e
		}()
	}
	var drops, missed uint64
	for k := range 8 {
		time.Sleep(200 * time.Millisecond) // a hold: writes flow under each leader
		l := leaderOf(c.Nodes[0])
		target := others(c, l)[k%2].NodeID()
		ln := c.Nodes[l-1]
		d0, m0 := ln.Stats().DroppedProposals, ln.Stats().MissedTransferAttempts
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		err := ln.TransferLeader(ctx, faultGroup, target)
		cancel()
		if err != nil {
			t.Fatalf("transfer %d (node %d → %d): %v", k, l, target, err)
		}
		drops += ln.Stats().DroppedProposals - d0
		missed += ln.Stats().MissedTransferAttempts - m0
		t.Logf("transfer %d: node %d → %d in %v", k, l, target, time.Since(start).Round(time.Microsecond))
	}
	close(stop)
	bg.Wait()
	close(errs)
	for e := range errs {
		for _, err := range e {
			t.Errorf("a write failed while leadership moved: %v", err)
		}
	}
	if missed > 0 || drops > 0 {
		t.Fatalf("%d transfer attempts missed and %d proposals were dropped over 8 transfers", missed, drops)
	}
	w.verify(c, 10*time.Second)
}

// TestNoTransferTowardAReplicaTheLeaderDoesNotHear: the cut-off node keeps
// an old status report (its age under the report limit for a while), but the
// leader has not heard from it: the preflight says target_unreachable, the
// transfer is refused before Raft is asked, and no proposal is dropped.
func TestNoTransferTowardAReplicaTheLeaderDoesNotHear(t *testing.T) {
	c, _, leader := faultStart(t)
	ln := c.Nodes[leader-1]
	ctrlID := c.Nodes[0].ControllerLeader()
	waitUntil(t, 5*time.Second, "a controller leader", func() bool { ctrlID = c.Nodes[0].ControllerLeader(); return ctrlID != 0 })
	ctrl := c.Nodes[ctrlID-1]
	var target slotstore.NodeID // a follower of the group that does not lead the controller
	for _, n := range others(c, leader) {
		if n.NodeID() != ctrlID {
			target = n.NodeID()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctrl.Testing().Leader().ObserveOnce(ctx)
	if pf, _, err := ctrl.Operator().LeaderTransfer(ctx, faultGroup, target, true); err != nil || !pf.OK {
		t.Fatalf("before the cut the transfer is safe: %+v %v", pf, err)
	}
	c.Net.Isolate(target)
	waitUntil(t, 5*time.Second, "the leader to stop hearing the cut-off replica", func() bool {
		return ln.HeardAgoMs(faultGroup, target) > 500
	})
	before := ln.Stats().DroppedProposals
	pf, _, err := ctrl.Operator().LeaderTransfer(ctx, faultGroup, target, false)
	var se *slotstore.Error
	if !errors.As(err, &se) || se.Code != slotstore.CodeConflict || pf.OK {
		t.Fatalf("transfer toward a cut-off replica: %+v, %v (want a conflict)", pf, err)
	}
	found := false
	for _, b := range pf.Blockers {
		found = found || b.Reason == policy.ReasonTargetUnreachable
	}
	if !found {
		t.Fatalf("the refusal does not say target_unreachable: %+v", pf.Blockers)
	}
	// The leader's own gate refuses too, whatever the view said.
	if err := ln.TransferLeader(ctx, faultGroup, target); slotstore.ErrorCode(err) != slotstore.CodeConflict {
		t.Fatalf("the leader's TransferLeader toward a replica it does not hear: %v", err)
	}
	if d := ln.Stats().DroppedProposals - before; d != 0 {
		t.Fatalf("%d proposals dropped: a transfer was started", d)
	}
	if l := leaderOf(ln); l != leader {
		t.Fatalf("leadership moved to node %d", l)
	}
}

// TestForwardsFollowTheNewLeader: the leader is cut off so that connections
// to it hang (as on a real network) while a follower forwards writes to it.
// Once the follower learns the new leader, a write stuck with the old one
// is answered at once — re-sent to the new leader when it carries an
// Idempotency-Key, "may or may not have been applied" otherwise — instead
// of hanging until the client's 10 s deadline.
func TestForwardsFollowTheNewLeader(t *testing.T) {
	c, w, leader := faultStart(t)
	c.Net.Hang(true)
	follower := others(c, leader)[0]
	for range 3 {
		w.mustPut(follower, 5*time.Second) // the forward path to the leader is warm
	}
	stop := make(chan struct{})
	type result struct {
		idem    bool
		errs    []error
		longest time.Duration
		ok      int
	}
	results := make(chan result, 4)
	var bg sync.WaitGroup
	var started atomic.Bool
	for i := range 4 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			started.Store(true)
			errs, longest, ok := writeLoop(w, follower, i%2 == 0, 10*time.Second, stop)
			results <- result{i%2 == 0, errs, longest, ok}
		}()
	}
	time.Sleep(100 * time.Millisecond) // a hold: the writers run before the cut
	cut := time.Now()
	c.Net.Isolate(leader)
	waitUntil(t, 10*time.Second, "the follower to learn a new leader", func() bool {
		l := leaderOf(follower)
		return l != 0 && l != leader
	})
	elected := time.Since(cut)
	time.Sleep(500 * time.Millisecond) // writes through the new leader
	close(stop)
	bg.Wait()
	close(results)
	var idemOK, plainOK int
	var longest time.Duration
	for r := range results {
		longest = max(longest, r.longest)
		for _, err := range r.errs {
			switch code := slotstore.ErrorCode(err); {
			case r.idem:
				t.Errorf("an idempotent write failed across the leader change: %v", err)
			case code != slotstore.CodeTimeout && code != slotstore.CodeRouteNotReady:
				t.Errorf("a write failed with %s: %v", code, err)
			}
		}
		if r.idem {
			idemOK += r.ok
		} else {
			plainOK += r.ok
		}
	}
	t.Logf("new leader known %v after the cut; longest write %v; acknowledged: %d idempotent, %d plain",
		elected.Round(time.Millisecond), longest.Round(time.Millisecond), idemOK, plainOK)
	// A write stuck with the old leader ends when the new one is known (or
	// at the hop deadline, 1 s): never at the client's 10 s.
	if limit := elected + 2*time.Second; longest > limit {
		t.Fatalf("a write took %v; the new leader was known %v after the cut", longest, elected)
	}
	if idemOK == 0 || plainOK == 0 {
		t.Fatalf("too few writes: %d idempotent, %d plain", idemOK, plainOK)
	}
	c.Net.Heal()
	w.verify(c, 10*time.Second)
}

// TestHealthShownAsItIs: a node cut off is unreachable once its reports
// are older than the limit — in NodeHealth (the API's and the console's
// source) and in the controller leader's metrics — and its groups are
// under-replicated; healed, it is reachable again, with a healthy streak
// that starts at its return.
func TestHealthShownAsItIs(t *testing.T) {
	regs := map[slotstore.NodeID]*prometheus.Registry{}
	var mu sync.Mutex
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 1, Faults: true, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.UnreachableAfter = 400 * time.Millisecond
		reg := prometheus.NewRegistry()
		mu.Lock()
		regs[cfg.NodeID] = reg
		mu.Unlock()
		cfg.Registerer = reg
	}})
	var ctrl *cluster.Node
	waitUntil(t, 5*time.Second, "a controller leader", func() bool {
		if id := c.Nodes[0].ControllerLeader(); id != 0 {
			ctrl = c.Nodes[id-1]
		}
		return ctrl != nil
	})
	var down slotstore.NodeID // a node that leads neither the controller nor the group
	for _, n := range c.Nodes {
		if n.NodeID() != ctrl.NodeID() && n.NodeID() != leaderOf(c.Nodes[0]) {
			down = n.NodeID()
		}
	}
	health := func() map[slotstore.NodeID]slotstore.NodeHealth {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs, err := ctrl.Operator().NodeHealth(ctx)
		if err != nil {
			return nil
		}
		out := map[slotstore.NodeID]slotstore.NodeHealth{}
		for _, h := range hs {
			out[h.Node] = h
		}
		return out
	}
	group := func() slotstore.GroupView {
		v, _ := ctrl.Operator().Group(context.Background(), faultGroup)
		return v
	}
	gauge := func(name, label string) float64 {
		mfs, err := regs[ctrl.NodeID()].Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if mf.GetName() == name && len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
					return m.GetGauge().GetValue()
				}
			}
		}
		return -1
	}
	waitUntil(t, 10*time.Second, "every node reachable, the group healthy", func() bool {
		h := health()
		return len(h) == 3 && h[down].Health == slotstore.NodeReachable && group().Health == slotstore.GroupHealthy
	})
	label := fmt.Sprint(down)
	if v := gauge("slotmeta_node_unreachable", label); v != 0 {
		t.Fatalf("slotmeta_node_unreachable{node=%s} = %v before the cut", label, v)
	}
	c.Net.Isolate(down)
	waitUntil(t, 10*time.Second, "the cut-off node unreachable and the group under-replicated", func() bool {
		return health()[down].Health == slotstore.NodeUnreachable && group().Health == slotstore.GroupUnderReplicated
	})
	if v := group().LiveVoters; v != 2 {
		t.Fatalf("live voters %d, want 2", v)
	}
	if gauge("slotmeta_node_unreachable", label) != 1 || gauge("slotmeta_group_under_replicated", "1") != 1 || gauge("slotmeta_group_live_voters", "1") != 2 {
		t.Fatalf("metrics: unreachable %v, under-replicated %v, live voters %v", gauge("slotmeta_node_unreachable", label),
			gauge("slotmeta_group_under_replicated", "1"), gauge("slotmeta_group_live_voters", "1"))
	}
	c.Net.Heal()
	back := time.Now()
	waitUntil(t, 10*time.Second, "the node reachable again", func() bool {
		h := health()[down]
		return h.Health == slotstore.NodeReachable && group().Health == slotstore.GroupHealthy
	})
	if h := health()[down]; h.HealthyForMs < 0 || time.Duration(h.HealthyForMs)*time.Millisecond > time.Since(back)+time.Second {
		t.Fatalf("healthy streak %dms: it must start at the return", h.HealthyForMs)
	}
	if gauge("slotmeta_node_unreachable", label) != 0 {
		t.Fatal("still unreachable in the metrics")
	}
}

// TestCloseIsPrompt: a node whose background work waits on a peer that
// hangs (its link black-holes every packet) still closes within a second:
// every loop's work derives its context from the node's lifetime, which
// Close ends first.
func TestCloseIsPrompt(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 1, Faults: true, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.RequestTimeout = 20 * time.Second
		cfg.ProjectInterval = 50 * time.Millisecond
	}})
	c.Net.Hang(true)
	ctrl := c.Nodes[0].ControllerLeader()
	for _, n := range c.Nodes {
		if n.NodeID() != ctrl {
			c.Net.Isolate(n.NodeID())
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // the controller leader's rounds now wait on the hung peer
	start := time.Now()
	if err := c.Nodes[ctrl-1].Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %v", took)
	}
	c.Net.Heal()
}
