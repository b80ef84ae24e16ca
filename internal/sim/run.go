package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/balance"
	"github.com/slotmeta/slotmeta/internal/engine/controller/leader"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Params are the simulated cluster's timings and rates (Scenario sets
// them; zero takes the default).
type Params struct {
	Step            time.Duration // the controller leader's round, ObserveInterval (default 1s)
	BalanceInterval time.Duration // default 5s, as cluster.Config's
	ElectionTimeout time.Duration // a group without a leader elects one this long after (default 500ms: one step)
	SnapshotRate    int64         // bytes/s a new replica receives its group's data at (default 50 MB/s)
	PhaseTimeout    time.Duration // a stuck task phase fails (default 2m, as cluster.Config's)
	Balancer        balance.Config
}

func (p Params) withDefaults() Params {
	if p.Step <= 0 {
		p.Step = time.Second
	}
	if p.BalanceInterval <= 0 {
		p.BalanceInterval = 5 * time.Second
	}
	if p.ElectionTimeout <= 0 {
		p.ElectionTimeout = 500 * time.Millisecond
	}
	if p.SnapshotRate <= 0 {
		p.SnapshotRate = 50 << 20
	}
	if p.PhaseTimeout <= 0 {
		p.PhaseTimeout = 2 * time.Minute
	}
	return p
}

// Run is one simulation: the real controller state machine and, on the
// node leading the controller, the real controller leader (observation,
// preferred leaders, task executor, balancer), driven round by round on a
// simulated clock against the world.
type Run struct {
	sc      *Scenario
	w       *world
	sm      *controller.StateMachine
	index   uint64
	mu      sync.Mutex // guards latest
	latest  *controller.State
	leaders map[slotstore.NodeID]*leader.Leader
	life    context.Context
	stop    context.CancelFunc
	rec     *recorder
	timers  []timer            // what events left for later (events.go)
	killed  []slotstore.NodeID // nodes down for good
	drained []slotstore.NodeID // nodes asked to drain
	hotSlot slotstore.HashSlot // the hot slot of a hot-slot event
	hot     bool
}

// start is the simulated clock's origin (any fixed instant: runs are
// deterministic).
var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewRun founds the scenario's cluster: its nodes, groups and load.
func NewRun(sc *Scenario) (*Run, error) {
	p := sc.Params.withDefaults()
	r := &Run{sc: sc, w: newWorld(p, sc.Seed, start), leaders: map[slotstore.NodeID]*leader.Leader{}}
	r.life, r.stop = context.WithCancel(context.Background())
	r.sm = controller.NewStateMachine(func(st *controller.State) {
		r.mu.Lock()
		r.latest = st
		r.mu.Unlock()
	})
	r.rec = newRecorder(r)
	b := controller.Bootstrap{ClusterID: "sim-" + sc.Name, GroupCount: sc.Groups, ReplicationFactor: sc.RF}
	for i := 1; i <= sc.Nodes; i++ {
		id := slotstore.NodeID(i)
		r.w.addNode(id)
		b.Nodes = append(b.Nodes, controller.Node{ID: id, RaftAddr: addrOf(id), PeerAddr: addrOf(id), State: controller.NodeActive})
		if i <= leader.ControllerVoters {
			r.w.ctrlVoters = append(r.w.ctrlVoters, id)
		}
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if _, err := r.propose(controller.Command{Bootstrap: &b}); err != nil {
		return nil, err
	}
	st := r.state()
	table, err := st.Table()
	if err != nil {
		return nil, err
	}
	r.w.owner = table.Groups()
	for hs := range r.w.slotBytes {
		r.w.slotBytes[hs] = sc.SlotBytes
		r.w.slotRate[hs] = sc.Load / slotstore.HashSlotCount
	}
	r.w.follow(st)
	for _, n := range r.w.nodes { // the founding replicas hold their data already
		for _, rep := range n.replicas {
			rep.addedAt = start.Add(-24 * time.Hour)
		}
	}
	r.w.ctrlLeader = r.w.ctrlVoters[0]
	return r, nil
}

// state is the controller state the run applied last (never changed: a
// new one replaces it).
func (r *Run) state() *controller.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest
}

// propose applies c to the controller state machine at the simulated time,
// through its encoding, as a node's proposal does; a refusal is an error.
func (r *Run) propose(c controller.Command) (controller.Result, error) {
	r.w.mu.Lock()
	c.TimeMs = r.w.now.UnixMilli()
	r.w.mu.Unlock()
	b, err := controller.EncodeCommand(c)
	if err != nil {
		return controller.Result{}, err
	}
	r.rec.command(len(b))
	r.mu.Lock()
	r.index++
	idx, before := r.index, r.latest
	r.mu.Unlock()
	res, err := r.sm.Update(sm.Entry{Index: idx, Cmd: b})
	if err != nil {
		return controller.Result{}, err
	}
	var out controller.Result
	if err := json.Unmarshal(res.Data, &out); err != nil {
		return out, err
	}
	if !out.OK {
		return out, &slotstore.Error{Code: cmp.Or(out.Code, slotstore.CodeInternal), Message: out.Message}
	}
	if before != nil {
		r.rec.started(c, before)
	}
	return out, nil
}

// leaderOf is node id's controller leader, made the first time the node
// leads the controller (its observations start empty, as a real new
// leader's do).
func (r *Run) leaderOf(id slotstore.NodeID) *leader.Leader {
	if l, ok := r.leaders[id]; ok {
		return l
	}
	p := r.w.params
	h := host{r: r, id: id}
	lead := policy.Leadership{ActiveWithin: 3 * p.Step, ReachableWithin: 2 * p.Step}
	lead.EnsureDefaults()
	l := leader.New(leader.Config{NodeID: id, Life: r.life, Host: h, Peers: h, Now: r.now,
		Logger:          slog.New(slog.DiscardHandler),
		ObserveInterval: p.Step, BalanceInterval: p.BalanceInterval, RequestTimeout: 3 * time.Second,
		UnreachableAfter: 3 * p.Step, TaskPhaseTimeout: p.PhaseTimeout, HighWaterInterval: 10 * time.Second,
		Leadership: lead, Balancer: p.Balancer, DisableQuiesce: true, BackoffSeed: uint64(r.sc.Seed)})
	r.leaders[id] = l
	return l
}

func (r *Run) now() time.Time {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return r.w.now
}

// Step advances the simulation by one round: the scenario's events due,
// the world (replicas follow the controller state, elections, load), the
// controller leader's round, and the recorder's sample.
func (r *Run) Step() error {
	r.w.mu.Lock()
	r.w.now = r.w.now.Add(r.w.params.Step)
	now := r.w.now
	r.w.mu.Unlock()
	for _, ev := range r.sc.due(now.Sub(start)) {
		if err := r.apply(ev); err != nil {
			return fmt.Errorf("at %v: %s: %w", now.Sub(start), ev.What, err)
		}
	}
	if err := r.runTimers(now.Sub(start)); err != nil {
		return fmt.Errorf("at %v: %w", now.Sub(start), err)
	}
	st := r.state()
	r.w.mu.Lock()
	r.w.follow(st)
	r.w.elect()
	r.w.load(r.w.params.Step)
	r.w.ctrlLeader = r.w.controllerLeader()
	ctrl := r.w.ctrlLeader
	r.w.mu.Unlock()
	if ctrl != 0 {
		l := r.leaderOf(ctrl)
		t0 := time.Now()
		l.Round()
		r.rec.round(time.Since(t0))
		if now.Sub(start)%r.w.params.BalanceInterval == 0 {
			// The balancer's own cost: one plan, timed apart from the
			// round (BalanceOnce plans the same from the same input).
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			alloc := ms.TotalAlloc
			t0 := time.Now()
			plan, _ := l.BalancerPlan(r.life)
			took := time.Since(t0)
			runtime.ReadMemStats(&ms)
			r.rec.plan(took, ms.TotalAlloc-alloc, len(plan.Actions))
		}
	}
	r.rec.sample(now)
	return nil
}

// controllerLeader keeps the controller's leader while its node is up,
// else the lowest up voter when a majority of the voters is up.
func (w *world) controllerLeader() slotstore.NodeID {
	if n := w.nodes[w.ctrlLeader]; n != nil && n.up && slices.Contains(w.ctrlVoters, w.ctrlLeader) {
		return w.ctrlLeader
	}
	var up []slotstore.NodeID
	for _, id := range w.ctrlVoters {
		if n := w.nodes[id]; n != nil && n.up {
			up = append(up, id)
		}
	}
	if len(up) <= len(w.ctrlVoters)/2 {
		return 0
	}
	slices.Sort(up)
	return up[0]
}

// Close stops what the run's leaders started.
func (r *Run) Close() { r.stop() }

// Elapsed is the simulated time since the start.
func (r *Run) Elapsed() time.Duration { return r.now().Sub(start) }

// Simulate runs sc to its end and reports it.
func Simulate(sc *Scenario) (Report, error) {
	t0 := time.Now()
	r, err := NewRun(sc)
	if err != nil {
		return Report{}, err
	}
	defer r.Close()
	for r.Elapsed() < sc.Duration {
		if err := r.Step(); err != nil {
			return Report{}, err
		}
	}
	return r.Report(time.Since(t0)), nil
}
