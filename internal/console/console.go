// Package console serves the operations console at /console: an overview,
// the hash-slot map, the groups (intent beside observed fact), one group's
// detail with its actions (leader transfer after a preflight, preferred
// leader, replica move), the tasks, the decision log, the balancer (its
// plan, the load per node, drains and removals), the backups, the charts
// of every node's vital signs, the heat map of the hash slots and the audit
// trail. Every action is recorded in the audit trail with the signed-in
// identity; a node running --insecure shows a banner on every page.
//
// The change tails (issue 27) show what the data did, beside what the
// cluster did: a group's page lists the newest changes of its hash slots,
// and a channel's page those of the channel's rows — read from the node's
// stored change log (Config.Changes, the log GET /v1/watch reads), not
// from a watch: a page shows the newest rows kept, a watch would start
// from now. Every read is bounded (tail.go: rows shown, records read,
// values cut), because its fragment is re-fetched (each change, or every 2 s); a slot whose
// log is not on this node is named, not an error. A tail is fetched when
// the node's watch stream reports a change to it (stream.go: the page's
// script follows one multiplexed stream, forwarded to the API) and polls
// only while it cannot.
//
// Pages are rendered on the server with templ (the *.templ files; the
// generated *_templ.go files are committed). The parts that change are
// fragments that htmx (vendored in web/static) re-fetches: most every 2 s
// (live in layout.templ), the charts every 10 s (they change once a step);
// the heat map has no fragment and does not refresh itself. The full pages
// render the same fragments, so everything reads without JavaScript.
// The handlers of each page family are methods of a small type of its own
// that holds the shared *console (overviewPages, slotPages, groupPages,
// taskPages, decisionPages, auditPages, backupPages, balancerPages,
// chartsPages, heatPages, changePages, loginPages), all registered in the
// one table of Handler; console keeps access control (access.go) and
// rendering.
//
// When access control is on (auth.Authenticator), reads need the read role,
// except the audit trail and the backups, which need admin, as do all
// actions. The login form sets an HttpOnly, SameSite=Strict cookie that
// holds a random session id, never the token: the token stays on the server
// in auth.Sessions. Actions are POST forms answered with a redirect
// (POST-redirect-GET) and guarded against cross-origin requests.
package console

//go:generate go tool templ generate

import (
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/a-h/templ"

	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
	"github.com/slotmeta/slotmeta/web"
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
	// Changes is the node's stored change log (watch.Source.Log, what
	// GET /v1/watch reads), for the change tails; nil: they say there is
	// none.
	Changes watch.Log
	// Version is the node's version, in every page's footer.
	Version string
	// API serves a request as a new one to the node's REST API (httpapi
	// passes it to the console it mounts): the live tails' watch stream is
	// forwarded to it (stream.go); nil: the tails poll.
	API http.Handler
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
	changes  watch.Log
	version  string
	api      http.Handler
	now      func() time.Time
}

// Handler serves the console; mount it at /console (it sees full paths).
func Handler(cfg Config) http.Handler {
	c := &console{src: cfg.Source, authn: cfg.Auth, limiter: cfg.Limiter, audit: cfg.Audit, security: cfg.Security, now: time.Now,
		sessions: cfg.Sessions, changes: cfg.Changes, version: cfg.Version, api: cfg.API}
	if c.sessions == nil {
		c.sessions = auth.NewSessions(auth.SessionsConfig{})
	}
	mux := http.NewServeMux()
	static, _ := fs.Sub(web.Static, "static")
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))

	// One table for the whole console; the handlers live with their page family.
	ov, sl, gr, ts := overviewPages{c}, slotPages{c}, groupPages{c}, taskPages{c}
	dc, au, ba, li, ch, bk := decisionPages{c}, auditPages{c}, balancerPages{c}, loginPages{c}, changePages{c}, backupPages{c}
	cp, hp, st := chartsPages{c}, heatPages{c}, streamPages{c}
	mux.HandleFunc("GET /console", c.read(ov.overviewPage))
	mux.HandleFunc("GET /console/{$}", c.read(ov.overviewPage))
	mux.HandleFunc("GET /console/slots", c.read(sl.slotsPage))
	mux.HandleFunc("GET /console/groups", c.read(gr.groupsPage))
	mux.HandleFunc("GET /console/groups/{id}", c.read(gr.groupPage))
	mux.HandleFunc("GET /console/tasks", c.read(ts.tasksPage))
	mux.HandleFunc("GET /console/decisions", c.read(dc.decisionsPage))
	mux.HandleFunc("GET /console/audit", c.readAs(auth.RoleAdmin, au.auditPage))
	mux.HandleFunc("GET /console/fragments/audit", c.readAs(auth.RoleAdmin, au.auditFragment))
	mux.HandleFunc("GET /console/backups", c.readAs(auth.RoleAdmin, bk.backupsPage))
	mux.HandleFunc("GET /console/fragments/backups", c.readAs(auth.RoleAdmin, bk.backupsFragment))
	mux.HandleFunc("POST /console/backups", c.action(bk.startBackup))
	mux.HandleFunc("GET /console/balancer", c.read(ba.balancerPage))
	mux.HandleFunc("GET /console/fragments/balancer", c.read(ba.balancerFragment))
	mux.HandleFunc("GET /console/charts", c.read(cp.chartsPage))
	mux.HandleFunc("GET /console/fragments/charts", c.read(cp.chartsFragment))
	mux.HandleFunc("GET /console/heat", c.read(hp.heatPage))
	mux.HandleFunc("GET /console/heat.png", c.read(hp.heatImage))
	mux.HandleFunc("POST /console/balancer", c.action(ba.setBalancer))
	mux.HandleFunc("POST /console/nodes/{id}/drain", c.action(ba.drainNode))
	mux.HandleFunc("POST /console/nodes/{id}/remove", c.action(ba.removeNode))

	mux.HandleFunc("GET /console/fragments/overview", c.read(ov.overviewFragment))
	mux.HandleFunc("GET /console/fragments/slots", c.read(sl.slotsFragment))
	mux.HandleFunc("GET /console/fragments/groups", c.read(gr.groupsFragment))
	mux.HandleFunc("GET /console/fragments/groups/{id}", c.read(gr.groupFragment))
	mux.HandleFunc("GET /console/fragments/tasks", c.read(ts.tasksFragment))
	mux.HandleFunc("GET /console/fragments/decisions", c.read(dc.decisionsFragment))
	mux.HandleFunc("GET /console/fragments/groups/{id}/changes", c.read(ch.groupFragment))
	mux.HandleFunc("GET /console/channels", c.read(ch.openChannel))
	mux.HandleFunc("GET /console/channels/{type}/{id}/changes", c.read(ch.channelPage))
	mux.HandleFunc("GET /console/fragments/channels/{type}/{id}/changes", c.read(ch.channelFragment))

	mux.HandleFunc("GET /console/login", li.loginPage)
	mux.HandleFunc("POST /console/login", li.login)
	mux.HandleFunc("POST /console/logout", li.logout)

	mux.HandleFunc("GET /console/groups/{id}/transfer", c.read(gr.confirmTransfer))
	mux.HandleFunc("GET /console/groups/{id}/moves", c.read(gr.confirmMove))
	mux.HandleFunc("POST /console/groups/{id}/transfer", c.action(groupAction(gr.transfer)))
	mux.HandleFunc("POST /console/groups/{id}/preferred", c.action(groupAction(gr.setPreferred)))
	mux.HandleFunc("POST /console/groups/{id}/moves", c.action(groupAction(gr.replicaMove)))
	mux.HandleFunc("POST /console/tasks/{id}/cancel", c.action(ts.cancelTask))
	mux.HandleFunc("POST /console/groups", c.action(gr.createGroup))
	mux.HandleFunc("POST /console/groups/{id}/split", c.action(groupAction(gr.splitGroup)))
	mux.HandleFunc("POST /console/groups/{id}/merge", c.action(groupAction(gr.mergeGroup)))
	mux.HandleFunc("POST /console/groups/{id}/retire", c.action(groupAction(gr.retireGroup)))
	mux.HandleFunc("POST /console/groups/{id}/check", c.action(groupAction(gr.checkGroup)))
	// The live tails' watch stream: the API checks and serves it.
	mux.HandleFunc("GET /console/stream", st.forward)
	mux.HandleFunc("POST /console/stream/{stream_id}", st.forward)

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

// ---- rendering ----

func (c *console) page(r *http.Request, title, nav string, body templ.Component) templ.Component {
	return Page(PageProps{Title: title, Nav: nav, Session: c.session(r), Now: c.now(), Version: c.version}, body)
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
	props := PageProps{Title: title, Nav: nav, Session: c.session(r), Now: c.now(), Flash: takeFlash(w, r), Version: c.version}
	c.render(w, r, http.StatusOK, Page(props, body))
}
