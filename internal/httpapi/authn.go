package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// authenticate refuses a request whose credentials are missing or wrong
// (401, with WWW-Authenticate) or whose role is too low (403), before any
// body is read. A source that failed too often is answered 429
// rate_limited with Retry-After before its token is looked at (the
// limiter guards the lookup, auth.Limiter.Guard). An admin action is
// recorded in the audit trail with its outcome (package audit).
func (a *api) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := a.auth.Check(r, auth.RequiredRole(r), a.limiter)
		if err != nil {
			switch slotstore.ErrorCode(err) {
			case slotstore.CodeUnauthenticated:
				a.metrics.authFailed()
				w.Header().Set("WWW-Authenticate", `Bearer realm="slotmeta"`)
			case slotstore.CodeRateLimited:
				a.metrics.authFailed()
			case slotstore.CodePermissionDenied:
				if audit.IsAdminAction(r) {
					defer a.audit.Record(r.Context(), id, a.auditRecord(r, r.Method+" "+r.URL.Path, http.StatusForbidden, err))
				}
			}
			a.writeError(w, r, err)
			return
		}
		if !a.auth.Enabled() && r.Header.Get("Authorization") != "" {
			// Not silent: a client that sends a token believes it is checked.
			w.Header().Set("Warning", `299 slotmeta "access control is off on this node: the credentials sent were not checked"`)
		}
		if !audit.IsAdminAction(r) {
			next.ServeHTTP(w, r)
			return
		}
		note := &auditNote{}
		r = r.WithContext(context.WithValue(r.Context(), auditNoteKey{}, note))
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		// Deferred: an action whose handler panics (answered 500 by the
		// recovery around this) is recorded too.
		defer func() {
			action := r.Method + " " + r.URL.Path
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				action = r.Method + " " + rc.RoutePattern()
			}
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			if p := recover(); p != nil {
				if ww.Status() == 0 {
					status = http.StatusInternalServerError // what the recovery around this answers
				}
				a.audit.Record(r.Context(), id, a.auditRecord(r, action, status, fmt.Errorf("panic: %v", p)))
				panic(p)
			}
			a.audit.Record(r.Context(), id, a.auditRecord(r, action, status, note.err))
		}()
		next.ServeHTTP(ww, r)
	})
}

// auditNote carries the error an admin action was answered with from
// writeError to the audit record.
type auditNote struct{ err error }

type auditNoteKey struct{}

// noteError remembers err for r's audit record, if r is an admin action.
func noteError(r *http.Request, err error) {
	if n, ok := r.Context().Value(auditNoteKey{}).(*auditNote); ok {
		n.err = err
	}
}

func (a *api) auditRecord(r *http.Request, action string, status int, err error) slotstore.AuditRecord {
	rec := slotstore.AuditRecord{Source: auth.Source(r), Action: action, Target: r.URL.Path, Status: status}
	if q := r.URL.RawQuery; q != "" {
		rec.Target += "?" + q
	}
	if err != nil {
		e := toError(err)
		rec.Code, rec.Detail = e.Code, e.Message
	}
	return rec
}
