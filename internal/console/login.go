package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// loginPages serves the sign-in form and signing out.
type loginPages struct{ *console }

func (c loginPages) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	c.render(w, r, http.StatusOK, c.page(r, "Sign in", "login", LoginBody(LoginProps{Next: safeNext(r.URL.Query().Get("next")), AuthEnabled: c.authn.Enabled()})))
}

func (c loginPages) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	_ = r.ParseForm()
	next := safeNext(r.PostForm.Get("next"))
	if !c.authn.Enabled() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	// The form's token is checked as the API checks a bearer token, through
	// the failure limiter.
	probe := r.Clone(r.Context())
	probe.Header = http.Header{"Authorization": {"Bearer " + tok}}
	probe.TLS = nil // the form signs in with the token it carries
	if _, err := c.authn.Check(probe, auth.RoleRead, c.limiter); err != nil || tok == "" {
		status, msg := http.StatusUnauthorized, "That token is not valid."
		if e := slotstore.AsError(err); e != nil && e.Code == slotstore.CodeRateLimited {
			w.Header().Set("Retry-After", strconv.Itoa(auth.RetryAfterSeconds(e.RetryAfter)))
			status, msg = http.StatusTooManyRequests, "Too many failed sign-ins from "+auth.Source(r)+"; try again in "+
				strconv.Itoa(auth.RetryAfterSeconds(e.RetryAfter))+" s."
		}
		c.render(w, r, status, c.page(r, "Sign in", "login", LoginBody(LoginProps{Next: next, AuthEnabled: true, Error: msg})))
		return
	}
	// The cookie holds a session id, never the token (auth.Sessions).
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: c.sessions.Open(tok), Path: cookiePath, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(c.sessions.TTL().Seconds())})
	setFlash(w, r, Flash{OK: true, Message: "Signed in as " + c.authn.RoleOf(tok).String() + "."})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c loginPages) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(auth.SessionCookie); err == nil {
		c.sessions.Close(ck.Value)
	}
	c.dropCookie(w, r)
	setFlash(w, r, Flash{OK: true, Message: "Signed out."})
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// safeNext keeps a post-login redirect inside the console.
func safeNext(s string) string {
	if !strings.HasPrefix(s, "/console") || strings.HasPrefix(s, "//") || strings.ContainsAny(s, "\\\r\n") {
		return "/console"
	}
	return s
}
