// Package console serves the operations console at /console: an overview,
// the hash-slot map, the groups (intent beside observed fact), one group's
// detail with its actions (leader transfer after a preflight, preferred
// leader, replica move), the tasks, the decision log, the balancer (its
// plan, the load per node, drains and removals) and the audit trail. Every
// action is recorded in the audit trail with the signed-in identity; a node
// running --insecure shows a banner on every page.
//
// Pages are rendered on the server with templ (the *.templ files; the
// generated *_templ.go files are committed). The parts that change are
// fragments that htmx (vendored in web/static) re-fetches every 2 s; the full
// pages render the same fragments, so everything reads without JavaScript.
//
// Reads need the read role and actions the admin role when access control
// is on (auth.Authenticator); the token lives in an HttpOnly, SameSite=Strict
// cookie set by the login form. Actions are POST forms answered with a
// redirect (POST-redirect-GET) and guarded against cross-origin requests.
package console

//go:generate go tool templ generate

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"slotmeta/internal/audit"
	"slotmeta/internal/auth"
	"slotmeta/internal/slotstore"
	"slotmeta/web"
)

// Source is what the console needs from the node: the operator's interface
// of the domain layer, the same the REST API's cluster routes use.
type Source = slotstore.Operator

// Config configures the console. Source is required; the rest may be nil.
type Config struct {
	Source Source
	// Auth checks the console's reads (read role) and actions (admin);
	// nil or without credentials: everything is allowed (the server then
	// listens on loopback only).
	Auth *auth.Authenticator
	// Limiter slows down a source whose sign-ins fail (429).
	Limiter *auth.Limiter
	// Audit records every action with the signed-in identity.
	Audit *audit.Recorder
	// Security, if set, tells whether the node runs --insecure (a banner on
	// every page).
	Security func() slotstore.SecurityStatus
	// Sessions keeps the signed-in browsers (default: a set of the
	// console's own).
	Sessions *auth.Sessions
}

// flashCookie carries the outcome of an action to the page the action
// redirects to (POST-redirect-GET).
const flashCookie = "slotmeta_flash"

// cookiePath scopes the console's cookies to the console.
const cookiePath = "/console"

type console struct {
	src      Source
	authn    *auth.Authenticator
	limiter  *auth.Limiter
	audit    *audit.Recorder
	security func() slotstore.SecurityStatus
	sessions *auth.Sessions
	now      func() time.Time
}

// Handler serves the console; mount it at /console (it sees full paths).
func Handler(cfg Config) http.Handler {
	c := &console{src: cfg.Source, authn: cfg.Auth, limiter: cfg.Limiter, audit: cfg.Audit, security: cfg.Security, now: time.Now,
		sessions: cfg.Sessions}
	if c.sessions == nil {
		c.sessions = auth.NewSessions(auth.SessionsConfig{})
	}
	mux := http.NewServeMux()
	static, _ := fs.Sub(web.Static, "static")
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))

	mux.HandleFunc("GET /console", c.read(c.overviewPage))
	mux.HandleFunc("GET /console/{$}", c.read(c.overviewPage))
	mux.HandleFunc("GET /console/slots", c.read(c.slotsPage))
	mux.HandleFunc("GET /console/groups", c.read(c.groupsPage))
	mux.HandleFunc("GET /console/groups/{id}", c.read(c.groupPage))
	mux.HandleFunc("GET /console/tasks", c.read(c.tasksPage))
	mux.HandleFunc("GET /console/decisions", c.read(c.decisionsPage))
	mux.HandleFunc("GET /console/audit", c.readAs(auth.RoleAdmin, c.auditPage))
	mux.HandleFunc("GET /console/fragments/audit", c.readAs(auth.RoleAdmin, c.auditFragment))
	mux.HandleFunc("GET /console/balancer", c.read(c.balancerPage))
	mux.HandleFunc("GET /console/fragments/balancer", c.read(c.balancerFragment))
	mux.HandleFunc("POST /console/balancer", c.action(c.setBalancer))
	mux.HandleFunc("POST /console/nodes/{id}/drain", c.action(c.drainNode))
	mux.HandleFunc("POST /console/nodes/{id}/remove", c.action(c.removeNode))

	mux.HandleFunc("GET /console/fragments/overview", c.read(c.overviewFragment))
	mux.HandleFunc("GET /console/fragments/slots", c.read(c.slotsFragment))
	mux.HandleFunc("GET /console/fragments/groups", c.read(c.groupsFragment))
	mux.HandleFunc("GET /console/fragments/groups/{id}", c.read(c.groupFragment))
	mux.HandleFunc("GET /console/fragments/tasks", c.read(c.tasksFragment))
	mux.HandleFunc("GET /console/fragments/decisions", c.read(c.decisionsFragment))

	mux.HandleFunc("GET /console/login", c.loginPage)
	mux.HandleFunc("POST /console/login", c.login)
	mux.HandleFunc("POST /console/logout", c.logout)

	mux.HandleFunc("POST /console/groups/{id}/transfer", c.action(c.transfer))
	mux.HandleFunc("POST /console/groups/{id}/preferred", c.action(c.setPreferred))
	mux.HandleFunc("POST /console/groups/{id}/moves", c.action(c.replicaMove))
	mux.HandleFunc("POST /console/tasks/{id}/cancel", c.action(c.cancelTask))
	mux.HandleFunc("POST /console/groups", c.action(c.createGroup))
	mux.HandleFunc("POST /console/groups/{id}/split", c.action(c.splitGroup))
	mux.HandleFunc("POST /console/groups/{id}/merge", c.action(c.mergeGroup))
	mux.HandleFunc("POST /console/groups/{id}/retire", c.action(c.retireGroup))

	// Cross-origin POSTs (CSRF) are refused: Sec-Fetch-Site, else Origin
	// against Host (net/http's CrossOriginProtection).
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, http.StatusForbidden, c.refusedPage(r, "Refused: this form was sent from another origin (cross-site request)."))
	}))
	return pageHeaders(cop.Handler(mux))
}

// contentSecurityPolicy lets the console's pages load only their own
// scripts, styles and images (the bars' widths are inline styles, htmx adds
// one for its indicator), send forms and requests only to their own node,
// and be framed by nobody.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// pageHeaders sets the headers that keep a browser from running, framing
// or leaking the console's pages elsewhere.
func pageHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

// ---- access control ----

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
func (c *console) record(r *http.Request, id auth.Identity, status int, outcome, detail string) {
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

func (c *console) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	c.render(w, r, http.StatusOK, c.page(r, "Sign in", "login", LoginBody(LoginProps{Next: safeNext(r.URL.Query().Get("next")), AuthEnabled: c.authn.Enabled()})))
}

func (c *console) login(w http.ResponseWriter, r *http.Request) {
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

func (c *console) logout(w http.ResponseWriter, r *http.Request) {
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

// ---- rendering ----

func (c *console) page(r *http.Request, title, nav string, body templ.Component) templ.Component {
	return Page(PageProps{Title: title, Nav: nav, Session: c.session(r), Now: c.now()}, body)
}

func (c *console) refusedPage(r *http.Request, msg string) templ.Component {
	return c.page(r, "Refused", "", Refused(msg, c.session(r)))
}

func (c *console) render(w http.ResponseWriter, r *http.Request, status int, comp templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := comp.Render(r.Context(), w); err != nil {
		_, _ = fmt.Fprintf(w, "<p>render failed: %s</p>", templ.EscapeString(err.Error()))
	}
}

func (c *console) full(w http.ResponseWriter, r *http.Request, title, nav string, body templ.Component) {
	props := PageProps{Title: title, Nav: nav, Session: c.session(r), Now: c.now(), Flash: takeFlash(w, r)}
	c.render(w, r, http.StatusOK, Page(props, body))
}

// ---- view models ----

func (c *console) overview(ctx context.Context) OverviewProps {
	p := OverviewProps{Summary: c.src.Summary(), Now: c.now()}
	groups, err := c.src.Groups(ctx)
	if err != nil {
		p.Err = errMessage(err)
	}
	for _, g := range groups {
		if g.Leader != 0 {
			p.WithLeader++
		} else {
			p.WithoutLeader++
		}
	}
	health := map[slotstore.NodeID]slotstore.NodeHealth{}
	if hs, err := c.src.NodeHealth(ctx); err == nil {
		for _, h := range hs {
			health[h.Node] = h
		}
	}
	for _, n := range c.src.Nodes() {
		row := NodeRow{NodeInfo: n, Health: slotstore.NodeHealth{Node: n.ID, Health: slotstore.NodeUnknown, ReportAgeMs: -1, HealthyForMs: -1}}
		if h, ok := health[n.ID]; ok {
			row.Health = h
		}
		for _, g := range groups {
			if g.Leader == n.ID {
				row.Leads++
			}
			for _, rv := range g.Replicas {
				if rv.Node == n.ID {
					row.Replicas++
				}
			}
		}
		p.Nodes = append(p.Nodes, row)
	}
	return p
}

func (c *console) slots(ctx context.Context) SlotsProps {
	p := SlotsProps{Now: c.now()}
	groups, err := c.src.Groups(ctx)
	if err != nil {
		p.Err = errMessage(err)
	}
	leaders := map[slotstore.GroupID]slotstore.NodeID{}
	for _, g := range groups {
		leaders[g.ID] = g.Leader
	}
	migrating := map[slotstore.HashSlot]slotstore.Task{}
	for _, t := range c.src.Tasks() {
		if t.Kind == "slot_migration" && t.HashSlot != nil && (t.Status == "running" || t.Status == "cancelling") {
			migrating[*t.HashSlot] = t
		}
	}
	m := c.src.SlotMap()
	count := map[slotstore.GroupID]int{}
	for i, g := range m {
		cell := SlotCell{Slot: slotstore.HashSlot(i), Group: g, Leader: leaders[g]}
		if t, ok := migrating[cell.Slot]; ok {
			cell.Migrating, cell.MigratingTo, cell.TaskID = true, t.ToGroup, t.ID
		}
		p.Cells = append(p.Cells, cell)
		count[g]++
	}
	for _, g := range groups {
		p.Legend = append(p.Legend, LegendItem{Group: g.ID, Leader: g.Leader, Slots: count[g.ID]})
	}
	return p
}

func (c *console) groups(ctx context.Context, canAct bool) GroupsProps {
	p := GroupsProps{Now: c.now(), CanAct: canAct}
	gs, err := c.src.Groups(ctx)
	if err != nil {
		p.Err = errMessage(err)
	}
	p.Groups = gs
	return p
}

func (c *console) group(ctx context.Context, id slotstore.GroupID, canAct bool) GroupProps {
	p := GroupProps{Now: c.now(), CanAct: canAct, Nodes: c.src.Nodes(), Others: c.otherGroups(id)}
	g, err := c.src.Group(ctx, id)
	if err != nil {
		p.Err = errMessage(err)
		return p
	}
	p.Group, p.Found = g, true
	// The preflight verdict for every other voter, before any button.
	cands := append([]slotstore.NodeID(nil), g.Voters...)
	if len(cands) == 0 {
		for _, d := range g.DesiredPeers {
			cands = append(cands, d.Node)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i] < cands[j] })
	for _, n := range cands {
		if n == g.Leader {
			continue
		}
		pf, _, err := c.src.LeaderTransfer(ctx, id, n, true)
		cand := Candidate{Node: n, Preflight: pf}
		if err != nil {
			cand.Err = errMessage(err)
		}
		p.Candidates = append(p.Candidates, cand)
	}
	for _, t := range c.src.Tasks() {
		if t.Group == id || t.ToGroup == id {
			p.Tasks = append(p.Tasks, t)
		}
	}
	ds := c.src.Decisions()
	for i := len(ds) - 1; i >= 0 && len(p.Decisions) < 50; i-- {
		if ds[i].Group == id {
			p.Decisions = append(p.Decisions, ds[i])
		}
	}
	return p
}

// otherGroups lists the groups other than id (the targets of a merge).
func (c *console) otherGroups(id slotstore.GroupID) []slotstore.GroupID {
	var out []slotstore.GroupID
	seen := map[slotstore.GroupID]bool{}
	for _, g := range c.src.SlotMap() {
		if g != 0 && g != id && !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (c *console) tasks() TasksProps {
	return TasksProps{Now: c.now(), Tasks: c.src.Tasks()}
}

func (c *console) decisions() DecisionsProps {
	ds := c.src.Decisions()
	out := make([]slotstore.Decision, 0, len(ds))
	for i := len(ds) - 1; i >= 0; i-- {
		out = append(out, ds[i])
	}
	return DecisionsProps{Now: c.now(), Decisions: out}
}

// ---- pages and fragments ----

func (c *console) overviewPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Overview", "overview", OverviewBody(c.overview(r.Context())))
}
func (c *console) overviewFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, OverviewFragment(c.overview(r.Context())))
}
func (c *console) slotsPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Hash slots", "slots", SlotsBody(c.slots(r.Context())))
}
func (c *console) slotsFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, SlotGrid(c.slots(r.Context())))
}
func (c *console) groupsPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Groups", "groups", GroupsBody(c.groups(r.Context(), c.session(r).CanAct)))
}
func (c *console) groupsFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, GroupsTable(c.groups(r.Context(), c.session(r).CanAct)))
}

func groupID(r *http.Request) (slotstore.GroupID, bool) {
	v, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
	return slotstore.GroupID(v), err == nil
}

func (c *console) groupPage(w http.ResponseWriter, r *http.Request) {
	id, ok := groupID(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	c.full(w, r, fmt.Sprintf("Group %d", id), "groups", GroupBody(c.group(r.Context(), id, c.session(r).CanAct)))
}
func (c *console) groupFragment(w http.ResponseWriter, r *http.Request) {
	id, ok := groupID(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	c.render(w, r, http.StatusOK, GroupLive(c.group(r.Context(), id, c.session(r).CanAct)))
}
func (c *console) tasksPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Tasks", "tasks", TasksBody(c.tasks()))
}
func (c *console) tasksFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, TaskList(c.tasks(), c.session(r).CanAct))
}
func (c *console) auditTrail() AuditProps {
	trail := c.src.AuditTrail()
	out := make([]slotstore.AuditRecord, 0, min(len(trail), 200))
	for i := len(trail) - 1; i >= 0 && len(out) < 200; i-- {
		out = append(out, trail[i])
	}
	return AuditProps{Records: out, Now: c.now()}
}

func (c *console) auditPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Audit trail", "audit", AuditBody(c.auditTrail()))
}
func (c *console) auditFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, AuditTable(c.auditTrail()))
}

func (c *console) decisionsPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Decision log", "decisions", DecisionsBody(c.decisions()))
}
func (c *console) decisionsFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, DecisionTable(c.decisions()))
}

// ---- actions ----

func formNode(r *http.Request, name string) (slotstore.NodeID, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(r.PostForm.Get(name)), 10, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("%s: want a node id", name)
	}
	return slotstore.NodeID(v), nil
}

func groupURL(id slotstore.GroupID) string { return fmt.Sprintf("/console/groups/%d", id) }

func (c *console) transfer(w http.ResponseWriter, r *http.Request) (string, Flash) {
	id, ok := groupID(r)
	if !ok {
		return "/console/groups", Flash{Message: "bad group id"}
	}
	target, err := formNode(r, "target")
	if err != nil {
		return groupURL(id), Flash{Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	pf, res, err := c.src.LeaderTransfer(ctx, id, target, false)
	if err != nil {
		msg := fmt.Sprintf("Leader transfer of group %d to node %d failed: %s", id, target, errMessage(err))
		if len(pf.Blockers) > 0 && slotstore.AsError(err) == nil {
			for _, b := range pf.Blockers {
				msg += "; " + b.Reason + ": " + b.Detail
			}
		}
		return groupURL(id), Flash{Message: msg}
	}
	return groupURL(id), Flash{OK: true, Message: fmt.Sprintf("Group %d: leadership moved from node %d to node %d (term %d) in %d ms.",
		id, res.PreviousLeader, res.Leader, res.Term, res.TookMs)}
}

func (c *console) setPreferred(w http.ResponseWriter, r *http.Request) (string, Flash) {
	id, ok := groupID(r)
	if !ok {
		return "/console/groups", Flash{Message: "bad group id"}
	}
	node, err := formNode(r, "node")
	if err != nil {
		return groupURL(id), Flash{Message: err.Error()}
	}
	if err := c.src.SetPreferredLeader(r.Context(), id, node); err != nil {
		return groupURL(id), Flash{Message: fmt.Sprintf("Setting the preferred leader of group %d failed: %s", id, errMessage(err))}
	}
	return groupURL(id), Flash{OK: true, Message: fmt.Sprintf("Group %d: preferred leader is now node %d (the reconciler moves leadership when it is safe).", id, node)}
}

func (c *console) replicaMove(w http.ResponseWriter, r *http.Request) (string, Flash) {
	id, ok := groupID(r)
	if !ok {
		return "/console/groups", Flash{Message: "bad group id"}
	}
	from, err := formNode(r, "from")
	if err != nil {
		return groupURL(id), Flash{Message: err.Error()}
	}
	to, err := formNode(r, "to")
	if err != nil {
		return groupURL(id), Flash{Message: err.Error()}
	}
	t, err := c.src.CreateReplicaMove(r.Context(), id, from, to)
	if err != nil {
		return groupURL(id), Flash{Message: fmt.Sprintf("Replica move of group %d from node %d to node %d refused: %s", id, from, to, errMessage(err))}
	}
	return groupURL(id), Flash{OK: true, Message: fmt.Sprintf("Task %d started: move group %d's replica from node %d to node %d.", t.ID, id, from, to)}
}

func (c *console) cancelTask(w http.ResponseWriter, r *http.Request) (string, Flash) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		return "/console/tasks", Flash{Message: "bad task id"}
	}
	back := "/console/tasks"
	if b := r.PostForm.Get("back"); b != "" {
		back = safeNext(b)
	}
	t, err := c.src.CancelTask(r.Context(), id)
	if err != nil {
		return back, Flash{Message: fmt.Sprintf("Cancelling task %d refused: %s", id, errMessage(err))}
	}
	return back, Flash{OK: true, Message: fmt.Sprintf("Task %d is %s.", t.ID, t.Status)}
}
