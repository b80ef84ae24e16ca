package leader

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/balance"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/engine/controller/tasks"
	"github.com/slotmeta/slotmeta/internal/engine/heat"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// tasksStepsPerRound bounds the steps of one task in one round.
const tasksStepsPerRound = 32

// Host is the node as the controller leader sees it.
type Host interface {
	// Controller is the node's copy of the controller state;
	// ControllerLeader the controller's leader as the node sees it (0:
	// unknown).
	Controller() *controller.State
	ControllerLeader() slotstore.NodeID
	// SyncController returns once the node's replica of the controller
	// applied every command the group committed before the call (a
	// ReadIndex round): Controller() then holds them.
	SyncController(ctx context.Context) error
	// Propose replicates a controller command, stamped with the node's
	// time, and returns its result once the node's replica applied it (a
	// refusal is an error).
	Propose(ctx context.Context, c controller.Command) (controller.Result, error)
	// Status is the node's own status report.
	Status(ctx context.Context) slotstore.NodeStatus
	// PeerAddr is a node's peer address ("" when unknown).
	PeerAddr(id slotstore.NodeID) string
	// TransferHere moves the leadership of g, which this node leads, to
	// target and waits until it moved; it returns the new leader and term.
	TransferHere(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID) (slotstore.NodeID, uint64, error)
	// Wake wakes quiesced groups (skip: a node not to ask).
	Wake(groups []slotstore.GroupID, skip slotstore.NodeID)
	// WakeOn wakes group g's replica on node alone (its leader's, say,
	// without waking followers that would campaign).
	WakeOn(g slotstore.GroupID, node slotstore.NodeID)
	// ControllerMembers is the controller group's membership: its voters
	// and non-voting members. PromoteController makes non-voting member
	// id a voter (voters.go).
	ControllerMembers(ctx context.Context) (voters, nonVoting []slotstore.NodeID, err error)
	PromoteController(ctx context.Context, id slotstore.NodeID) error

	// What the task executor needs of the node beside the leader's own
	// views (package tasks' Node).
	Membership(ctx context.Context, req tasks.MembershipRequest) (tasks.Membership, error)
	GroupLeader(g slotstore.GroupID) slotstore.NodeID
	ProposeToGroup(ctx context.Context, g slotstore.GroupID, cmd meta.Command) (meta.Result, error)
	meta.Reader
}

// Peers is how the leader asks other nodes (peer.Client).
type Peers interface {
	Call(ctx context.Context, method, addr, path string, body []byte, hdr map[string]string) (resp *http.Response, sent bool, err error)
}

// Config configures a Leader. Host, Peers, Now and Life are required.
type Config struct {
	NodeID slotstore.NodeID
	// Life ends when the node begins to close: the work of every round
	// derives its context from it, so closing does not wait out a timeout.
	Life   context.Context
	Host   Host
	Peers  Peers
	Now    func() time.Time
	Logger *slog.Logger

	// ObserveInterval is the period of Run's rounds (negative: Run does
	// nothing; tests drive the rounds). BalanceInterval is the period of
	// balancer rounds within them (≤ 0: none).
	ObserveInterval time.Duration
	BalanceInterval time.Duration
	// HighWaterInterval is the period of the groups' high-water marks
	// (highwater.go; default DefaultHighWaterInterval).
	HighWaterInterval time.Duration
	// HeatStep is the width of a heat-map column (default heat.DefaultStep).
	HeatStep time.Duration
	// RequestTimeout bounds each proposal and transfer of a round.
	RequestTimeout time.Duration
	// UnreachableAfter: a node whose latest report is older is unreachable.
	UnreachableAfter time.Duration
	// TaskPhaseTimeout fails a task phase stuck this long (package tasks).
	TaskPhaseTimeout time.Duration

	Leadership           policy.Leadership
	Balancer             balance.Config
	DisableBalancer      bool // plan drains only
	DisableQuiesce       bool // no group is quiesced: none to wake
	DisableHashSlotMoves bool // the balancer moves, splits and merges no slots

	// BackoffSeed seeds the jitter of the transfer back-off.
	BackoffSeed uint64
	// ServedTransfer, when set, is told of every raw transfer another node
	// asked of this one over the peer port (attribution).
	ServedTransfer func(ctx context.Context)
	// Checks runs state checks (check.go; nil: none). CheckEvery is how
	// often each group is checked in the background (default
	// DefaultCheckEvery; negative: only when an operator asks);
	// CheckTimeout bounds one background check (default 10 minutes).
	Checks       CheckHost
	CheckEvery   time.Duration
	CheckTimeout time.Duration
	// Views, set only by tests, replaces the observed views the
	// preferred-leader reconciler and the high-water marks decide from.
	Views func(now time.Time) []slotstore.GroupView
}

// Leader is the controller leader's work on one node.
type Leader struct {
	cfg       Config
	obs       *policy.Observations // reports and health streaks
	load      *heat.Tracker        // per-slot rates, from the reports
	backoff   *policy.Backoff      // per group, after failed transfers
	tasks     *tasks.Executor
	balancer  balancerBook
	transfers sync.Map                                       // GroupID → time.Time: transfers started here and not seen to finish
	rounds    struct{ lastBalance, lastHighWater time.Time } // Round's own, one round at a time
	version   versionStep                                    // clusterversion.go
	decided   sync.Map                                       // GroupID → string: the last decision recorded per group (to log changes only)
	checks    checkBook                                      // state checks (check.go)
}

// New returns a Leader; it does nothing until driven (Run or the *Once calls).
func New(cfg Config) *Leader {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.CheckEvery == 0 {
		cfg.CheckEvery = DefaultCheckEvery
	}
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = 10 * time.Minute
	}
	l := &Leader{cfg: cfg, obs: policy.NewObservations(), load: heat.NewTracker(cfg.HeatStep, 0), backoff: policy.NewBackoff(cfg.BackoffSeed)}
	l.checks.last, l.checks.started = map[slotstore.GroupID]slotstore.GroupCheck{}, map[slotstore.GroupID]time.Time{}
	l.checks.epochs = map[slotstore.GroupID]uint64{}
	l.tasks = tasks.New(tasks.Config{Node: taskNode{l}, PhaseTimeout: cfg.TaskPhaseTimeout, ActiveWithin: cfg.Leadership.ActiveWithin,
		MaxLag: cfg.Leadership.MaxLag, RequestTimeout: cfg.RequestTimeout, Now: cfg.Now, Logger: cfg.Logger})
	return l
}

// Leads reports whether this node leads the controller group.
func (l *Leader) Leads() bool { return l.cfg.Host.ControllerLeader() == l.cfg.NodeID }

// Run drives the rounds until stop closes: every ObserveInterval, one
// Round. Each round's work is bounded by Config.Life and its own timeout.
func (l *Leader) Run(stop <-chan struct{}) {
	if l.cfg.ObserveInterval < 0 {
		return // driven by tests
	}
	t := time.NewTicker(l.cfg.ObserveInterval)
	defer t.Stop()
	defer l.checks.wg.Wait() // the background check ends with the node's life
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		l.Round()
	}
}

// Round is one round of the controller leader's work: while this node
// leads the controller, observe (and raise the cluster version when every
// node runs a newer one), reconcile, keep the controller's voters, record the
// high-water marks (every HighWaterInterval), step the tasks
// and, every BalanceInterval, balance; while it does not, forget the
// observations. Run calls it every ObserveInterval; the simulator (package
// sim) calls it on its simulated clock. Rounds must not overlap.
func (l *Leader) Round() {
	life := l.cfg.Life
	if !l.Leads() {
		l.obs.StepDown()
		l.checks.stepDown()
		l.rounds.lastBalance = l.cfg.Now()
		return
	}
	if l.rounds.lastBalance.IsZero() {
		// The first balancer round after taking the lead comes a full
		// interval later: the reports and load rates must fill in first.
		l.rounds.lastBalance = l.cfg.Now()
	}
	ctx, cancel := context.WithTimeout(life, cmp.Or(max(l.cfg.ObserveInterval, 0), time.Second))
	l.ObserveOnce(ctx)
	cancel()
	l.ReconcileOnce(l.cfg.Now())
	vctx, vcancel := context.WithTimeout(life, l.cfg.RequestTimeout)
	l.KeepControllerVoters(vctx, l.cfg.Now())
	if now := l.cfg.Now(); now.Sub(l.rounds.lastHighWater) >= cmp.Or(l.cfg.HighWaterInterval, DefaultHighWaterInterval) {
		l.rounds.lastHighWater = now
		l.RecordHighWater(vctx, now)
	}
	vcancel()
	tctx, tcancel := context.WithTimeout(life, 2*l.cfg.RequestTimeout)
	if l.Leads() {
		l.tasks.Drive(tctx, tasksStepsPerRound)
	}
	tcancel()
	if l.cfg.BalanceInterval > 0 && l.Leads() && l.cfg.Now().Sub(l.rounds.lastBalance) >= l.cfg.BalanceInterval {
		l.rounds.lastBalance = l.cfg.Now()
		bctx, bcancel := context.WithTimeout(life, 2*l.cfg.RequestTimeout)
		l.BalanceOnce(bctx, l.rounds.lastBalance)
		bcancel()
	}
	if l.Leads() {
		l.checkInBackground(l.cfg.Now())
	}
}

// TasksOnce runs one step of every running task (controller leader only).
func (l *Leader) TasksOnce(ctx context.Context) {
	if l.Leads() {
		l.tasks.Once(ctx, l.cfg.Host.Controller().TasksNewestFirst())
	}
}

// record appends a decision to the replicated log (best effort: a decision
// that cannot be recorded is logged locally and the round goes on).
func (l *Leader) record(d slotstore.Decision) {
	ctx, cancel := context.WithTimeout(l.cfg.Life, l.cfg.RequestTimeout)
	defer cancel()
	rec := controller.DecisionOf(d)
	if _, err := l.cfg.Host.Propose(ctx, controller.Command{Decision: &rec}); err != nil {
		l.cfg.Logger.Warn("could not record a decision", "group", d.Group, "kind", d.Kind, "reason", d.Reason, "err", err)
	}
}

// taskNode is the node as the task executor sees it (tasks.Node): the
// leader's own views and transfers, the rest from the Host.
type taskNode struct{ l *Leader }

var _ tasks.Node = taskNode{}

func (t taskNode) Controller() *controller.State { return t.l.cfg.Host.Controller() }
func (t taskNode) Membership(ctx context.Context, req tasks.MembershipRequest) (tasks.Membership, error) {
	return t.l.cfg.Host.Membership(ctx, req)
}
func (t taskNode) Observe(ctx context.Context) { t.l.ObserveOnce(ctx) }
func (t taskNode) Group(ctx context.Context, g slotstore.GroupID) (slotstore.GroupView, error) {
	return t.l.Group(ctx, g)
}
func (t taskNode) GroupLeader(g slotstore.GroupID) slotstore.NodeID {
	return t.l.cfg.Host.GroupLeader(g)
}
func (t taskNode) Transfer(ctx context.Context, v slotstore.GroupView, target slotstore.NodeID) error {
	_, err := t.l.execute(ctx, v, target)
	return err
}
func (t taskNode) Advance(ctx context.Context, a controller.AdvanceTask) error {
	_, err := t.l.cfg.Host.Propose(ctx, controller.Command{AdvanceTask: &a})
	return err
}
func (t taskNode) Record(d slotstore.Decision) { t.l.record(d) }
func (t taskNode) WakeLeader(g slotstore.GroupID, leader slotstore.NodeID) {
	if !t.l.cfg.DisableQuiesce {
		t.l.cfg.Host.WakeOn(g, leader)
	}
}
func (t taskNode) RetireGroup(ctx context.Context, g slotstore.GroupID) error {
	_, err := t.l.cfg.Host.Propose(ctx, controller.Command{RetireGroup: &controller.RetireGroup{Group: g}})
	return err
}
func (t taskNode) ProposeToGroup(ctx context.Context, g slotstore.GroupID, cmd meta.Command) (meta.Result, error) {
	return t.l.cfg.Host.ProposeToGroup(ctx, g, cmd)
}
func (t taskNode) Read(ctx context.Context, q meta.Query, c meta.Consistency) (any, meta.ReadInfo, error) {
	return t.l.cfg.Host.Read(ctx, q, c)
}
