package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Access control: who may read and act (auth.Authenticator's roles, checked
// per request), the session cookie, the audit record of every action and the
// flash that carries an action's outcome to the page it redirects to.

// session describes who is looking, for the header.
func (c *console) session(r *http.Request) Session {
	s := Session{AuthEnabled: c.authn.Enabled(), Node: c.src.NodeID()}
	if c.security != nil {
		st := c.security()
		s.Insecure, s.Warnings = st.Insecure, st.Warnings
	}
	if !s.AuthEnabled {
		s.Role = "admin (access control off)"
		s.CanAct = true
		return s
	}
	// Only what a guarded check (readAs, action) already found: rendering
	// must not be a way to test tokens past the failure limiter.
	if id := auth.IdentityFrom(r.Context()); id.Role != auth.RoleNone {
		s.SignedIn = true
		s.Role = id.Role.String() + " as " + id.Name
		s.CanAct = id.Role >= auth.RoleAdmin
	}
	return s
}

// read wraps a GET handler: the read role is needed when access control is
// on; a browser without it is sent to the login form.
func (c *console) read(h http.HandlerFunc) http.HandlerFunc { return c.readAs(auth.RoleRead, h) }

// readAs is read with another role (the audit trail needs admin).
func (c *console) readAs(role auth.Role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		r, ended := c.sessions.WithSession(r)
		id, err := c.authn.Check(r, role, c.limiter)
		if err != nil {
			if ended {
				c.dropCookie(w, r)
			}
			if slotstore.ErrorCode(err) == slotstore.CodePermissionDenied {
				c.render(w, r, http.StatusForbidden, c.refusedPage(r.WithContext(auth.WithIdentity(r.Context(), id)), "Refused: "+errMessage(err)+"."))
				return
			}
			c.dropStaleCookie(w, r, err)
			if strings.HasPrefix(r.URL.Path, "/console/fragments/") {
				// 286: htmx stops polling — a tab left open with a token
				// that no longer works must not keep failing against the
				// limiter (and lock its address out).
				http.Error(w, "sign in again: "+errMessage(err), htmxStopPolling)
				return
			}
			http.Redirect(w, r, "/console/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, auth.WithRequestIdentity(r, id))
	}
}

// action wraps a POST handler: the admin role is checked here, and a
// refusal is shown (nothing is done).
func (c *console) action(h func(w http.ResponseWriter, r *http.Request) (redirect string, f Flash)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		r, ended := c.sessions.WithSession(r)
		id, err := c.authn.Check(r, auth.RoleAdmin, c.limiter)
		if err != nil {
			if ended {
				c.dropCookie(w, r)
			}
			if status := statusOf(err); status == http.StatusForbidden {
				c.record(r, id, status, slotstore.AuditDenied, errMessage(err))
				r = auth.WithRequestIdentity(r, id)
			} else {
				c.dropStaleCookie(w, r, err)
			}
			c.render(w, r, statusOf(err), c.refusedPage(r, "Refused: "+errMessage(err)+". Nothing was changed."))
			return
		}
		r = auth.WithRequestIdentity(r, id)
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if err := r.ParseForm(); err != nil {
			c.render(w, r, http.StatusBadRequest, c.refusedPage(r, "Bad form: "+err.Error()))
			return
		}
		to, f := h(w, r)
		outcome := slotstore.AuditOK
		if !f.OK {
			outcome = slotstore.AuditRefused
		}
		c.record(r, id, http.StatusSeeOther, outcome, f.Message)
		setFlash(w, r, f)
		http.Redirect(w, r, to, http.StatusSeeOther)
	}
}

// htmxStopPolling is the status that makes htmx stop a polling trigger.
const htmxStopPolling = 286

// dropStaleCookie ends the session and clears its cookie when the
// session's token was refused (rotated away, say), so that the browser
// stops sending it.
func (c *console) dropStaleCookie(w http.ResponseWriter, r *http.Request, err error) {
	if slotstore.ErrorCode(err) != slotstore.CodeUnauthenticated {
		return
	}
	if ck, cerr := r.Cookie(auth.SessionCookie); cerr == nil {
		c.sessions.Close(ck.Value)
		c.dropCookie(w, r)
	}
}

// dropCookie clears the session cookie.
func (c *console) dropCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: "", Path: cookiePath, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
}

// record writes an action to the audit trail: the console's route
// pattern names it, the flash message is its detail.
func (c *console) record(r *http.Request, id auth.Identity, status int, outcome slotstore.AuditOutcome, detail string) {
	c.audit.Record(r.Context(), id, slotstore.AuditRecord{Source: auth.Source(r), Action: "console " + r.Pattern,
		Target: r.URL.Path, Status: status, Outcome: outcome, Detail: detail})
}

func statusOf(err error) int {
	switch e := slotstore.AsError(err); {
	case e != nil && e.Code == slotstore.CodePermissionDenied:
		return http.StatusForbidden
	case e != nil && e.Code == slotstore.CodeRateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusUnauthorized
}

func errMessage(err error) string {
	e := slotstore.AsError(err)
	if e == nil {
		return err.Error()
	}
	msg := e.Message
	if msg == "" {
		msg = e.Error()
	}
	for _, d := range e.Details {
		msg += "; " + d.Field + ": " + d.Reason
	}
	return msg
}

func setFlash(w http.ResponseWriter, r *http.Request, f Flash) {
	if f.Message == "" {
		return
	}
	v := "err:"
	if f.OK {
		v = "ok:"
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: url.QueryEscape(v + f.Message), Path: cookiePath,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: 60})
}

// takeFlash reads and clears the flash of the previous action.
func takeFlash(w http.ResponseWriter, r *http.Request) *Flash {
	ck, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: cookiePath, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	v, err := url.QueryUnescape(ck.Value)
	if err != nil {
		return nil
	}
	if m, ok := strings.CutPrefix(v, "ok:"); ok {
		return &Flash{OK: true, Message: m}
	}
	if m, ok := strings.CutPrefix(v, "err:"); ok {
		return &Flash{Message: m}
	}
	return nil
}
