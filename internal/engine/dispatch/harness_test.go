package dispatch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// The harness: this node is node 1 of three (peer addresses "n1".."n3");
// one group, 1, owns every hash slot and has a desired replica on each
// node. The other nodes and this node's replica are scripted: each call
// takes the next step scripted for its target, in order, and is logged.
//
// A step is one line: `<target> <action> [arguments]`, target `local` (this
// node's replica) or `n2`, `n3`. Actions:
//
//	ok                          answered: applied (a peer: sent)
//	result <code>               the group's state machine refused it (a result code)
//	refuse <code> [hint=<n>] [term=<t>]   an error answer (a peer: sent)
//	unreachable                 not sent: the dial failed (route_not_ready)
//	hang                        sent, then no answer until the hop's deadline
//	queue                       not sent: waits in the forward queue until the
//	                            deadline or until another leader is known
//	read <value>                a read answered with value
//
// and, on any step, `leader=<n>/<term>`: before acting, this node learns
// that node n leads group 1 at term (an election, a transfer).
type harness struct {
	t      *testing.T
	d      *Dispatcher
	router *routing.Router
	cfg    Config
	local  *fakeLocal

	mu    sync.Mutex
	steps map[string][]step
	log   []string
	// onWake, when set, is the leader (and term) the group elects when it
	// is woken: a quiesced group's election, at the dispatcher's call.
	onWake     slotstore.NodeID
	onWakeTerm uint64
}

type step struct {
	target, action string
	args           []string
	code           slotstore.Code
	hint           slotstore.NodeID
	term           uint64
	leader         slotstore.NodeID
	leaderTerm     uint64
	line           string
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, router: routing.NewRouter(), steps: map[string][]step{}}
	table, err := routing.InitialTable(1)
	if err != nil {
		t.Fatal(err)
	}
	h.router.SetTable(table)
	st := &controller.State{Nodes: map[slotstore.NodeID]*controller.Node{}, Groups: map[slotstore.GroupID]*controller.Group{
		1: {ID: 1, Peers: map[slotstore.NodeID]uint64{1: 1, 2: 2, 3: 3}}}}
	for id := slotstore.NodeID(1); id <= 3; id++ {
		st.Nodes[id] = &controller.Node{ID: id, PeerAddr: fmt.Sprintf("n%d", id)}
	}
	h.local = &fakeLocal{h: h, heard: map[slotstore.NodeID]time.Duration{}}
	h.cfg = Config{NodeID: 1, Router: h.router, Local: h.local, Peers: fakePeers{h}, Controller: func() *controller.State { return st },
		MaxForwardHops: 2, ForwardHopTimeout: 40 * time.Millisecond, ForwardMoveGrace: 30 * time.Millisecond,
		LeaderWait: 60 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		Now:      func() time.Time { return time.Unix(1_800_000_000, 0) },
		Proposal: func(slotstore.GroupID, slotstore.Code) {},
		LeaderMove: func(redirected bool) {
			h.logf("leader move: %s", map[bool]string{true: "redirected", false: "unknown"}[redirected])
		},
		Wake: func(g slotstore.GroupID, leader slotstore.NodeID) {
			h.logf("wake group %d (leader %d)", g, leader)
			if h.onWake != 0 {
				h.logf("group %d elects node %d at term %d", g, h.onWake, h.onWakeTerm)
				h.router.SetLeader(g, h.onWake, h.onWakeTerm)
				h.onWake = 0
			}
		},
	}
	return h
}

// start builds the dispatcher from the config as the case left it.
func (h *harness) start() { h.d = New(h.cfg) }

func (h *harness) logf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, fmt.Sprintf(format, args...))
}

// script parses the steps of a case.
func (h *harness) script(input string) {
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			h.t.Fatalf("step %q: want <target> <action>", line)
		}
		s := step{target: f[0], action: f[1], line: line}
		for _, a := range f[2:] {
			k, v, ok := strings.Cut(a, "=")
			switch {
			case !ok:
				s.args = append(s.args, a)
			case k == "hint":
				s.hint = slotstore.NodeID(h.num(v))
			case k == "term":
				s.term = h.num(v)
			case k == "leader":
				n, t, _ := strings.Cut(v, "/")
				s.leader, s.leaderTerm = slotstore.NodeID(h.num(n)), h.num(t)
			default:
				h.t.Fatalf("step %q: unknown argument %q", line, a)
			}
		}
		if s.action == "refuse" || s.action == "result" {
			if len(s.args) == 0 {
				h.t.Fatalf("step %q: which code?", line)
			}
			s.code = slotstore.Code(s.args[0])
		}
		h.steps[s.target] = append(h.steps[s.target], s)
	}
}

func (h *harness) num(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		h.t.Fatalf("not a number: %q", s)
	}
	return n
}

// next takes target's next step and logs the call; a call nothing was
// scripted for is logged and refused (the case's output shows it).
func (h *harness) next(target, call string) (step, bool) {
	h.mu.Lock()
	q := h.steps[target]
	if len(q) == 0 {
		h.log = append(h.log, fmt.Sprintf("%s %s: UNSCRIPTED", target, call))
		h.mu.Unlock()
		return step{}, false
	}
	s := q[0]
	h.steps[target] = q[1:]
	h.log = append(h.log, fmt.Sprintf("%s %s: %s", target, call, strings.TrimPrefix(s.line, target+" ")))
	h.mu.Unlock()
	if s.leader != 0 {
		h.router.SetLeader(1, s.leader, s.leaderTerm)
	}
	return s, true
}

// unused lists the steps no call took.
func (h *harness) unused() []string {
	var out []string
	for _, target := range []string{"local", "n1", "n2", "n3"} {
		for _, s := range h.steps[target] {
			out = append(out, "unused: "+s.line)
		}
	}
	return out
}

// fakePeers plays the other nodes.
type fakePeers struct{ h *harness }

func (p fakePeers) answer(ctx context.Context, addr, call string, moved <-chan struct{}) (meta.Result, slotstore.Route, bool, error) {
	s, ok := p.h.next(addr, call)
	if !ok {
		return meta.Result{}, slotstore.Route{}, false, slotstore.Errorf(slotstore.CodeInternal, "unscripted call")
	}
	node := slotstore.NodeID(p.h.num(strings.TrimPrefix(addr, "n")))
	route := slotstore.Route{GroupID: 1, LeaderNodeID: node}
	switch s.action {
	case "ok":
		return meta.Result{Revision: 7}, route, true, nil
	case "result":
		return meta.Result{Code: s.code, Message: "refused by the state machine"}, route, true, nil
	case "refuse":
		return meta.Result{}, route, true, &slotstore.Error{Code: s.code, LeaderHint: s.hint, LeaderTerm: s.term, Message: "refused by " + addr}
	case "unreachable":
		return meta.Result{}, slotstore.Route{}, false, &slotstore.Error{Code: slotstore.CodeRouteNotReady, Message: "peer " + addr + " unreachable"}
	case "hang":
		<-ctx.Done()
		return meta.Result{}, slotstore.Route{}, true, &slotstore.Error{Code: slotstore.CodeTimeout, Err: ctx.Err(),
			Message: "deadline passed while forwarding to the leader; the write may or may not have been applied"}
	case "queue":
		select {
		case <-moved:
			return meta.Result{}, slotstore.Route{}, false, &slotstore.Error{Code: slotstore.CodeRouteNotReady,
				Message: "the group's leader moved before the write was forwarded; not sent"}
		case <-ctx.Done():
			return meta.Result{}, slotstore.Route{}, false, &slotstore.Error{Code: slotstore.CodeTimeout, Err: ctx.Err(),
				Message: "deadline passed before the write was forwarded; not sent"}
		}
	}
	p.h.t.Fatalf("step %q: no such action for a peer", s.line)
	return meta.Result{}, slotstore.Route{}, false, nil
}

func (p fakePeers) Forward(ctx context.Context, addr string, _ []byte, moved <-chan struct{}) (meta.Result, slotstore.Route, bool, error) {
	return p.answer(ctx, addr, "forward", moved)
}

func (p fakePeers) Propose(ctx context.Context, addr string, _ []byte, g slotstore.GroupID) (meta.Result, slotstore.Route, bool, error) {
	return p.answer(ctx, addr, fmt.Sprintf("propose to group %d", g), nil)
}

func (p fakePeers) Read(ctx context.Context, addr string, q meta.Query, c meta.Consistency) (any, meta.ReadInfo, error) {
	s, ok := p.h.next(addr, "read")
	if !ok {
		return nil, meta.ReadInfo{}, slotstore.Errorf(slotstore.CodeInternal, "unscripted call")
	}
	node := slotstore.NodeID(p.h.num(strings.TrimPrefix(addr, "n")))
	info := meta.ReadInfo{ServedBy: node, Route: slotstore.Route{GroupID: 1}}
	switch s.action {
	case "read":
		if q, ok := q.(*meta.GetRows); ok { // a read of rows: every key found with the value
			return rowsOf(q, strings.Join(s.args, " ")), info, nil
		}
		return strings.Join(s.args, " "), info, nil
	case "refuse":
		return nil, info, &slotstore.Error{Code: s.code, LeaderHint: s.hint, LeaderTerm: s.term, Message: "refused by " + addr}
	case "unreachable":
		return nil, info, &slotstore.Error{Code: slotstore.CodeRouteNotReady, Message: "peer " + addr + " unreachable"}
	case "hang":
		<-ctx.Done()
		return nil, info, &slotstore.Error{Code: slotstore.CodeTimeout, Err: ctx.Err(), Message: "no answer from " + addr}
	}
	p.h.t.Fatalf("step %q: no such action for a read", s.line)
	return nil, info, nil
}

// fakeLocal plays this node's replica of group 1 (when it has one).
type fakeLocal struct {
	h           *harness
	has         bool
	leaderKnown bool
	heard       map[slotstore.NodeID]time.Duration
}

func (l *fakeLocal) Replica(g slotstore.GroupID) Replica {
	if !l.has || g != 1 {
		return nil
	}
	return fakeReplica{l}
}

func (l *fakeLocal) HeardAgo(g slotstore.GroupID, node slotstore.NodeID) (time.Duration, bool) {
	ago, ok := l.heard[node]
	return ago, ok && l.has && g == 1
}

// GetRows reads the parts of group 1 here: step "local rows ok" answers
// every key found with the value "local rows", "local rows stopped" as a
// replica that stopped meanwhile (not read), "local rows refuse <code>"
// fails the read.
func (l *fakeLocal) GetRows(groups []slotstore.GroupID, qs []*meta.GetRows) ([]*meta.RowBatch, error) {
	s, ok := l.h.next("local", fmt.Sprintf("rows of groups %v", groups))
	if !ok {
		return nil, slotstore.Errorf(slotstore.CodeInternal, "unscripted call")
	}
	if s.action != "rows" || len(s.args) == 0 {
		l.h.t.Fatalf("step %q: want local rows ok|stopped|refuse <code>", s.line)
	}
	out := make([]*meta.RowBatch, len(qs))
	switch s.args[0] {
	case "ok":
		for i, q := range qs {
			out[i] = rowsOf(q, "local rows")
		}
	case "stopped":
	case "refuse":
		return nil, &slotstore.Error{Code: slotstore.Code(s.args[1]), Message: "the store refused the read"}
	}
	return out, nil
}

// rowsOf is q's answer with every key found, its row value.
func rowsOf(q *meta.GetRows, value string) *meta.RowBatch {
	b := &meta.RowBatch{Items: make([]meta.RowBatchItem, len(q.Keys))}
	for i := range b.Items {
		b.Items[i] = meta.RowBatchItem{State: meta.BatchFound, Row: []byte(value)}
	}
	return b
}

type fakeReplica struct{ l *fakeLocal }

func (r fakeReplica) Submit(ctx context.Context, enc []byte) (meta.Result, error) {
	// What a replica is given decodes, and carries the leader's clock.
	cmd, err := meta.DecodeCommand(enc)
	if err != nil {
		r.l.h.t.Fatalf("submitted %x: %v", enc, err)
	}
	if got, want := cmd.Head().TimeMs, r.l.h.cfg.Now().UnixMilli(); got != want {
		r.l.h.t.Fatalf("submitted with time %d, want the leader's %d", got, want)
	}
	s, ok := r.l.h.next("local", "submit")
	if !ok {
		return meta.Result{}, slotstore.Errorf(slotstore.CodeInternal, "unscripted call")
	}
	switch s.action {
	case "ok":
		return meta.Result{Revision: 7}, nil
	case "result":
		return meta.Result{Code: s.code, Message: "refused by the state machine"}, nil
	case "refuse":
		return meta.Result{}, &slotstore.Error{Code: s.code, LeaderHint: s.hint, LeaderTerm: s.term, Message: "refused by the local proposer"}
	case "hang":
		<-ctx.Done()
		return meta.Result{}, &slotstore.Error{Code: slotstore.CodeTimeout, Err: ctx.Err(), Message: "proposal timed out"}
	}
	r.l.h.t.Fatalf("step %q: no such action for a local submit", s.line)
	return meta.Result{}, nil
}

func (r fakeReplica) LeaderKnown() bool { return r.l.leaderKnown }

func (r fakeReplica) AwaitRead(ctx context.Context) error {
	s, ok := r.l.h.next("local", "read round")
	if !ok {
		return slotstore.Errorf(slotstore.CodeInternal, "unscripted call")
	}
	switch s.action {
	case "ok":
		return nil
	case "refuse":
		return &slotstore.Error{Code: s.code, Message: "read round refused"}
	case "hang":
		<-ctx.Done()
		return &slotstore.Error{Code: slotstore.CodeTimeout, Err: ctx.Err(), Message: "read round timed out"}
	}
	r.l.h.t.Fatalf("step %q: no such action for a read round", s.line)
	return nil
}

func (r fakeReplica) Read(meta.Query) (any, error) { return "local value", nil }

func (r fakeReplica) AppliedIndex() uint64 { return 42 }
