package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Peer writes — commands another node proposes here through the peer port
// (a forwarded write, a hash-slot move step, a leader transfer, a
// membership change) — are attributed to the node they came from
// (peer.OriginOf): every one is counted by origin and kind
// (slotmeta_peer_writes_total), and those that are admin actions in the
// audit trail's sense (a step of a channel's migration: audit.IsAdminAction)
// are recorded in the trail as done by that node, through the peer port.
//
// Why not every write: the trail records admin actions, bounded to
// controller.MaxAudit records; the API records no data write either, and a
// second of forwarded writes would push every admin record out. What a
// secret holder proposes is therefore visible by node in the counter and,
// for admin actions, in the trail next to (or without) the API's record of
// the operator who asked: a step with no operator record beside it came
// from something that holds the secret but is not a node's API.
//
// The origin is a claim as good as the cluster secret (any holder may name
// any node); an origin that is no registered node is counted as "unknown".

// peerWriteKind is a kind of peer write (the kind label).
type peerWriteKind string

// Kinds of peer writes.
const (
	peerWriteData        peerWriteKind = "data"
	peerWriteSlotMove    peerWriteKind = "slot_move"
	peerWriteChannelTask peerWriteKind = "channel_task"
	peerWriteTransfer    peerWriteKind = "transfer"
	peerWriteMembership  peerWriteKind = "membership"
)

// peerAuditTimeout bounds the wait for one audit record of a peer write
// (as audit.DefaultTimeout does for the API's).
const peerAuditTimeout = 5 * time.Second

// peerWriteKindOf classifies a proposed command.
func peerWriteKindOf(cmd meta.Command) peerWriteKind {
	switch cmd.(type) {
	case *meta.CreateChannelTask, *meta.AdvanceChannelTask, *meta.AbortChannelTask:
		return peerWriteChannelTask
	case meta.SlotCommand:
		return peerWriteSlotMove
	}
	return peerWriteData
}

// peerWrites attributes the node's peer writes (its own small type, not
// more methods on Node).
type peerWrites struct {
	nodes   func() *controller.State                                     // who is registered
	counted *prometheus.CounterVec                                       // slotmeta_peer_writes_total{from,kind}
	lost    prometheus.Counter                                           // audit records that could not be written
	audit   func(context.Context, slotstore.AuditRecord) (uint64, error) // Node.Audit
	log     *slog.Logger
}

// origin names a peer request's origin for the metric: a registered
// node's id, or "unknown" (bounded: a secret holder naming made-up nodes
// cannot grow the label set).
func (p *peerWrites) origin(from slotstore.NodeID) string {
	if _, ok := p.nodes().Nodes[from]; ok && from != 0 {
		return strconv.FormatUint(uint64(from), 10)
	}
	return "unknown"
}

// wrote attributes one peer write of kind to the node it came from.
func (p *peerWrites) wrote(ctx context.Context, kind peerWriteKind) {
	p.counted.WithLabelValues(p.origin(peer.OriginOf(ctx)), string(kind)).Inc()
}

// proposed attributes a command proposed through the peer port and
// records it in the audit trail when it is an admin action; res and err
// are what proposing it gave (dispatch.Config.ServedWrite).
func (p *peerWrites) proposed(ctx context.Context, r *http.Request, cmd meta.Command, res *meta.Result, err error) {
	kind := peerWriteKindOf(cmd)
	p.wrote(ctx, kind)
	if kind != peerWriteChannelTask || notHere(err) {
		return
	}
	from := peer.OriginOf(ctx)
	via := "peer"
	if r.TLS != nil {
		via = "peer-tls"
	}
	if err == nil {
		err = res.Err() // refused by the state machine
	}
	status := http.StatusOK
	rec := slotstore.AuditRecord{Who: fmt.Sprintf("node %d", from), Role: "node", Via: via, Source: auth.Source(r),
		Action: "peer propose " + channelTaskAction(cmd), Target: "/v1/channels/" + cmd.RouteKey() + "/migrations"}
	if err != nil {
		status = peer.StatusOf(err)
		rec.Code, rec.Detail = slotstore.ErrorCode(err), err.Error()
	}
	rec.Status, rec.Outcome = status, slotstore.OutcomeOf(status)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), peerAuditTimeout)
	defer cancel()
	if _, aerr := p.audit(actx, rec.Bounded()); aerr != nil {
		// Not silent: the write happened and cannot be undone (as
		// audit.Recorder does for the API's records).
		p.log.Error("audit record of a peer write lost", "err", aerr, "who", rec.Who, "source", rec.Source,
			"action", rec.Action, "target", rec.Target, "outcome", rec.Outcome)
		p.lost.Inc()
	}
}

// notHere reports a refusal that says the command was not taken here at
// all (another group or leader has it; the sender follows the hint and
// proposes it there, where it is recorded): nothing to audit.
func notHere(err error) bool {
	switch slotstore.ErrorCode(err) {
	case slotstore.CodeNotLeader, slotstore.CodeRouteNotReady, slotstore.CodeRouteRevisionMismatch,
		slotstore.CodeSlotMigrating, slotstore.CodeWrongGroup, slotstore.CodeQueueFull, slotstore.CodeBusy:
		return true
	}
	return false
}

// channelTaskAction names a channel migration step.
func channelTaskAction(cmd meta.Command) string {
	switch cmd.(type) {
	case *meta.CreateChannelTask:
		return "create_channel_task"
	case *meta.AdvanceChannelTask:
		return "advance_channel_task"
	}
	return "abort_channel_task"
}
