package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"slotmeta/internal/audit"
	"slotmeta/internal/auth"
	"slotmeta/internal/slotstore"
)

// authenticate refuses a request whose credentials are missing or wrong
// (401, with WWW-Authenticate) or whose role is too low (403), before any
// body is read. A source that failed too often is answered 429
// rate_limited with Retry-After before its credentials are looked at. The
// identity goes into the request's context, and an admin action is
// recorded in the audit trail with its outcome (package audit).
func (a *api) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need := auth.RequiredRole(r)
		src := auth.Source(r)
		if need != auth.RoleNone && a.auth.Enabled() {
			if wait, blocked := a.limiter.Blocked(src); blocked {
				a.writeError(w, r, &slotstore.Error{Code: slotstore.CodeRateLimited, RetryAfter: wait,
					Message: "too many failed authentications from " + src + "; retry after " + strconv.Itoa(auth.RetryAfterSeconds(wait)) + " s"})
				return
			}
		}
		id, err := a.auth.Require(r, need)
		if err != nil {
			switch slotstore.ErrorCode(err) {
			case slotstore.CodeUnauthenticated:
				if auth.TokenOf(r) != "" {
					// A wrong credential counts against its source; a
					// missing one (a scraper without a token) guesses
					// nothing.
					a.limiter.Failed(src)
				}
				a.metrics.authFailed()
				w.Header().Set("WWW-Authenticate", `Bearer realm="slotmeta"`)
			case slotstore.CodePermissionDenied:
				if audit.IsAdminAction(r) {
					defer a.audit.Record(r.Context(), id, a.auditRecord(r, src, r.Method+" "+r.URL.Path, http.StatusForbidden, err))
				}
			}
			a.writeError(w, r, err)
			return
		}
		r = r.WithContext(auth.WithIdentity(r.Context(), id))
		if !audit.IsAdminAction(r) {
			next.ServeHTTP(w, r)
			return
		}
		note := &auditNote{}
		r = r.WithContext(context.WithValue(r.Context(), auditNoteKey{}, note))
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		action := r.Method + " " + r.URL.Path
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			action = r.Method + " " + rc.RoutePattern()
		}
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		a.audit.Record(r.Context(), id, a.auditRecord(r, src, action, status, note.err))
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

func (a *api) auditRecord(r *http.Request, src, action string, status int, err error) slotstore.AuditRecord {
	rec := slotstore.AuditRecord{Source: src, Action: action, Target: r.URL.Path, Status: status}
	if q := r.URL.RawQuery; q != "" {
		rec.Target += "?" + q
	}
	if err != nil {
		e := toError(err)
		rec.Code, rec.Detail = e.Code, e.Message
	}
	return rec
}
