// Package audit writes the audit trail: which requests are admin actions,
// and recording each one — who asked (the auth.Identity), what, from where,
// and the outcome — through a Sink that replicates it (the controller keeps
// the bounded trail; GET /v1/cluster/audit reads it).
//
// Model. An admin action is recorded after it was carried out or refused,
// before its answer leaves the node (the answer waits at most
// DefaultTimeout, 5 s, for the record: New sets it and nothing changes it;
// the request's own deadline or cancellation does not cut the wait short).
// A record that cannot be written is not silent: it is logged at error
// level with every field and counted (Lost), since the action it describes
// already happened and cannot be undone. Requests refused for unknown
// credentials are not recorded (anyone could flood the bounded trail with
// them); they are rate-limited and counted instead (package auth).
// Requests with known credentials but too low a role are recorded as
// denied.
//
// Concurrency contract: a Recorder is safe for concurrent use; Record
// blocks its caller for at most DefaultTimeout (as long as the Sink gives
// up when its context ends).
package audit

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Sink stores a record and returns its sequence number (cluster.Node).
type Sink interface {
	Audit(ctx context.Context, rec slotstore.AuditRecord) (uint64, error)
}

// DefaultTimeout bounds the wait for one record.
const DefaultTimeout = 5 * time.Second

// Recorder records admin actions.
type Recorder struct {
	sink    Sink
	log     *slog.Logger
	timeout time.Duration
	lost    atomic.Uint64
}

// New returns a recorder writing to sink; a nil sink records nothing.
func New(sink Sink, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.Default()
	}
	return &Recorder{sink: sink, log: log, timeout: DefaultTimeout}
}

// Lost is how many records could not be written.
func (r *Recorder) Lost() uint64 {
	if r == nil {
		return 0
	}
	return r.lost.Load()
}

// IsAdminAction reports whether req is an admin action the trail records:
// a change that needs the admin role (every change under /v1/cluster but a
// route lookup), or a step of a channel's leader migration (create,
// advance, abort).
func IsAdminAction(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	if auth.RequiredRole(req) == auth.RoleAdmin {
		return true
	}
	p := req.URL.Path
	return strings.HasPrefix(p, "/v1/channels/") && (strings.HasSuffix(strings.TrimSuffix(p, "/"), "/migrations") || strings.Contains(p, "/migrations/"))
}

// Record writes one record for an action by id. ctx may be the request's
// (its cancellation does not stop the write; DefaultTimeout bounds it).
func (r *Recorder) Record(ctx context.Context, id auth.Identity, rec slotstore.AuditRecord) {
	if r == nil || r.sink == nil {
		return
	}
	rec.Who, rec.Role, rec.Via = id.Name, id.Role.String(), string(id.Via)
	if rec.Outcome == "" {
		rec.Outcome = slotstore.OutcomeOf(rec.Status)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	defer cancel()
	if _, err := r.sink.Audit(ctx, rec.Bounded()); err != nil {
		r.lost.Add(1)
		r.log.Error("audit: record not written", "err", err, "who", rec.Who, "role", rec.Role, "via", rec.Via,
			"source", rec.Source, "action", rec.Action, "target", rec.Target, "outcome", rec.Outcome, "status", rec.Status,
			"code", rec.Code, "detail", rec.Detail)
	}
}
