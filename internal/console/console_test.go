package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/operatortest"
)

// ---- HTML helpers ----

func parse(t *testing.T, s string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// byTestID returns every element whose data-testid is id, in document order.
func byTestID(root *html.Node, id string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && attr(n, "data-testid") == id {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func render(t *testing.T, c interface {
	Render(ctx context.Context, w io.Writer) error
}) *html.Node {
	t.Helper()
	var b strings.Builder
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return parse(t, b.String())
}

func one(t *testing.T, root *html.Node, id string) *html.Node {
	t.Helper()
	ns := byTestID(root, id)
	if len(ns) != 1 {
		t.Fatalf("want one %q, found %d", id, len(ns))
	}
	return ns[0]
}

var now = time.UnixMilli(1_800_000_000_000)

// ---- component tests (plain props) ----

// TestGroupPageShowsAFailedReplica: a replica its node could not start is
// marked failed on the group page, with the engine's reason.
func TestGroupPageShowsAFailedReplica(t *testing.T) {
	const reason = "the engine panicked loading the replica: got out of range state, st.commit 1016, range[0,15]"
	g := slotstore.GroupView{ID: 1, HashSlots: 256, PreferredLeader: 1, Leader: 1, Term: 3, Voters: []slotstore.NodeID{1, 2, 3},
		Replicas: []slotstore.ReplicaView{{Node: 1, AppliedIndex: 90, Role: slotstore.RoleVoter, Live: true},
			{Node: 2, ReplicaID: 2, Role: slotstore.RoleUnknown, Desired: true, HeardAgoMs: -1, UnansweredMs: -1, Failed: reason},
			{Node: 3, AppliedIndex: 90, Role: slotstore.RoleVoter, Live: true}}}
	gp := render(t, GroupLive(GroupProps{Found: true, Now: now, Group: g}))
	if got := text(one(t, gp, "replica-2")); !strings.Contains(got, "failed to start: "+reason) {
		t.Fatalf("the failed replica's row: %q", got)
	}
	if got := text(one(t, gp, "replica-3")); strings.Contains(got, "failed") {
		t.Fatalf("a running replica's row: %q", got)
	}
}

// TestAStateCheckThatFoundADivergenceIsShown: the group page shows the
// last check (its verdict, the replica that differs, the fenced replica's
// state) and the overview a banner naming the group.
func TestAStateCheckThatFoundADivergenceIsShown(t *testing.T) {
	check := slotstore.GroupCheck{Group: 2, CheckID: 9, Index: 40, Verdict: slotstore.CheckDiverged,
		Replicas: []slotstore.ReplicaCheck{{Node: 1, ReplicaID: 1, Digest: "aa", Rows: 5, Agrees: true},
			{Node: 2, ReplicaID: 2, Digest: "bb", Rows: 5}, {Node: 3, ReplicaID: 3, Digest: "aa", Rows: 5, Agrees: true}},
		Differing: []slotstore.HashSlot{17}, Minority: []slotstore.NodeID{2}, Fenced: []slotstore.NodeID{2},
		Action: "the minority is fenced (stopped, reported failed); the balancer rebuilds it from the majority"}
	fenced := "fenced by a state check: check 9 at index 40: differs from the majority in hash slots [hs17]"
	g := slotstore.GroupView{ID: 2, HashSlots: 128, Leader: 1, Term: 3, Voters: []slotstore.NodeID{1, 2, 3}, LastCheck: &check,
		Replicas: []slotstore.ReplicaView{{Node: 1, ReplicaID: 1, Role: slotstore.RoleVoter, Live: true},
			{Node: 2, ReplicaID: 2, Role: slotstore.RoleUnknown, HeardAgoMs: -1, UnansweredMs: -1, Failed: fenced, Fenced: true},
			{Node: 3, ReplicaID: 3, Role: slotstore.RoleVoter, Live: true}}}
	gp := render(t, GroupLive(GroupProps{Found: true, Now: now, Group: g}))
	last := one(t, gp, "last-check")
	if got := text(last); !strings.Contains(got, "diverged") || !strings.Contains(got, "hash slots 17") || !strings.Contains(got, "fenced") {
		t.Fatalf("the last check: %q", got)
	}
	if got := text(one(t, gp, "replica-2")); !strings.Contains(got, fenced) || strings.Contains(got, "failed to start") {
		t.Fatalf("the fenced replica's row: %q", got)
	}
	if ns := byTestID(gp, "reads-fenced"); len(ns) != 0 {
		t.Fatal("a group with a majority shows its reads fenced")
	}
	g.ReadsFenced = "group 2 diverged at index 40 with no majority: hash slots 17 differ"
	if got := text(one(t, render(t, GroupLive(GroupProps{Found: true, Now: now, Group: g})), "reads-fenced")); !strings.Contains(got, g.ReadsFenced) {
		t.Fatalf("the read fence: %q", got)
	}
	ov := render(t, OverviewFragment(OverviewProps{Now: now, Known: true, Diverged: []slotstore.GroupCheck{check}}))
	if got := text(one(t, ov, "diverged-banner")); !strings.Contains(got, "group 2") || !strings.Contains(got, "nodes [2]") {
		t.Fatalf("the overview's banner: %q", got)
	}
	if ns := byTestID(render(t, OverviewFragment(OverviewProps{Now: now, Known: true})), "diverged-banner"); len(ns) != 0 {
		t.Fatal("a banner with no divergence")
	}
}

// TestADiskLowNodeIsShown: the overview of a node whose disk is low shows
// a banner with the figures and what it means; a node with room, none.
// The overview also shows the cluster version, and says so when this node
// runs a newer line (an upgrade in progress).
func TestADiskLowNodeIsShown(t *testing.T) {
	low := slotstore.ClusterSummary{NodeID: 2, ClusterVersion: slotstore.Version{Minor: 1}, Version: slotstore.Version{Minor: 2},
		Disk: slotstore.DiskUsage{Low: true, FreeBytes: 20 << 20, TotalBytes: 1 << 30, ReserveBytes: 256 << 20}}
	ov := render(t, OverviewFragment(OverviewProps{Now: now, Known: true, Summary: low}))
	if got := text(one(t, ov, "disk-low-banner")); !strings.Contains(got, "node 2") || !strings.Contains(got, "20 MiB free of 1024 MiB") ||
		!strings.Contains(got, "256 MiB reserve") || !strings.Contains(got, "no_space") {
		t.Fatalf("the disk banner: %q", got)
	}
	if got := text(one(t, ov, "cluster-version")); !strings.Contains(got, "0.1") || !strings.Contains(got, "this node runs 0.2") {
		t.Fatalf("the cluster version while mixed: %q", got)
	}
	low.Disk.Low, low.ClusterVersion = false, low.Version
	ov = render(t, OverviewFragment(OverviewProps{Now: now, Known: true, Summary: low}))
	if ns := byTestID(ov, "disk-low-banner"); len(ns) != 0 {
		t.Fatal("a disk banner for a node with room")
	}
	if got := text(one(t, ov, "cluster-version")); got != "0.2" {
		t.Fatalf("the cluster version: %q", got)
	}
}

func TestGroupWithoutLeaderSaysSoNeverThePreferredLeader(t *testing.T) {
	p := GroupsProps{Now: now, Groups: []slotstore.GroupView{
		{ID: 1, HashSlots: 128, PreferredLeader: 1, Leader: 3, Term: 5, ConfigEpoch: 1, Voters: []slotstore.NodeID{1, 2, 3},
			Replicas: []slotstore.ReplicaView{{Node: 3, AppliedIndex: 90}, {Node: 1, AppliedIndex: 10, Lag: 80}}},
		{ID: 2, HashSlots: 128, PreferredLeader: 2, Leader: 0, Term: 0, ConfigEpoch: 2},
	}}
	doc := render(t, GroupsTable(p))
	g1 := one(t, doc, "group-1")
	if got := text(one(t, g1, "leader")); !strings.Contains(got, "node 3") || !strings.Contains(got, "not preferred") {
		t.Fatalf("group 1 leader cell: %q", got)
	}
	if got := text(one(t, g1, "term")); got != "5" {
		t.Fatalf("group 1 term: %q", got)
	}
	g2 := one(t, doc, "group-2")
	leader := one(t, g2, "leader")
	if got := text(leader); !strings.Contains(got, "no live leader") || strings.Contains(got, "node 2") {
		t.Fatalf("group 2 without a leader must say so, not name the preferred one: %q", got)
	}
	if len(byTestID(leader, "no-leader")) != 1 || attr(g2, "data-leader") != "0" {
		t.Fatal("group 2 lacks the no-leader marker")
	}
	// The group page says the same.
	gp := render(t, GroupLive(GroupProps{Found: true, Now: now, Group: p.Groups[1]}))
	if got := text(one(t, one(t, gp, "group-2"), "leader")); !strings.Contains(got, "no live leader") {
		t.Fatalf("group page: %q", got)
	}
}

func TestPreflightBlockersAreListedAndTheButtonDisabled(t *testing.T) {
	p := GroupProps{Found: true, CanAct: true, Now: now,
		Group: slotstore.GroupView{ID: 4, Leader: 1, Term: 7, Voters: []slotstore.NodeID{1, 2, 3}},
		Candidates: []Candidate{
			{Node: 2, Preflight: slotstore.Preflight{OK: true, Target: 2}},
			{Node: 3, Preflight: slotstore.Preflight{Target: 3, TargetLag: 5000, Blockers: []slotstore.Blocker{
				{Reason: "target_lagging", Detail: "node 3 is 5000 entries behind"},
				{Reason: "stale_observation", Detail: "the leader report is 12s old"},
			}}},
		}}
	doc := render(t, GroupLive(p))
	ok := one(t, doc, "preflight-2")
	if got := text(one(t, ok, "verdict")); !strings.Contains(got, "safe") {
		t.Fatalf("verdict for node 2: %q", got)
	}
	if b := one(t, ok, "transfer-2"); hasAttr(b, "disabled") {
		t.Fatal("a safe transfer's button is disabled")
	}
	blocked := one(t, doc, "preflight-3")
	if got := text(one(t, blocked, "verdict")); !strings.Contains(got, "blocked") {
		t.Fatalf("verdict for node 3: %q", got)
	}
	bs := byTestID(blocked, "blocker")
	if len(bs) != 2 || !strings.Contains(text(bs[0]), "target_lagging") || !strings.Contains(text(bs[0]), "5000 entries behind") ||
		!strings.Contains(text(bs[1]), "stale_observation") {
		t.Fatalf("blockers: %d", len(bs))
	}
	if b := one(t, blocked, "transfer-3"); !hasAttr(b, "disabled") {
		t.Fatal("a blocked transfer's button is enabled")
	}
	// Without the admin role every button is disabled.
	p.CanAct = false
	if b := one(t, render(t, GroupLive(p)), "transfer-2"); !hasAttr(b, "disabled") {
		t.Fatal("button enabled without admin")
	}
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func TestSlotGridHas256CellsThatTellSlotGroupAndLeader(t *testing.T) {
	src := newFake()
	src.SetGroup(slotstore.GroupView{ID: 2, Leader: 0})
	hs := slotstore.HashSlot(200)
	src.PutTask(slotstore.Task{ID: 9, Kind: "slot_migration", Group: 2, ToGroup: 1, HashSlot: &hs, Status: "running"})
	c := &console{src: src, now: func() time.Time { return now }}
	doc := render(t, SlotGrid(slotPages{c}.slots(context.Background())))
	cells := byTestID(doc, "slot-cell")
	slots := src.SlotMap()
	if len(cells) != slotstore.HashSlotCount {
		t.Fatalf("%d cells, want 256", len(cells))
	}
	for i, cell := range cells {
		g := slots[i]
		if attr(cell, "data-slot") != u64(uint64(i)) || attr(cell, "data-group") != gid(g) {
			t.Fatalf("cell %d: slot %s group %s", i, attr(cell, "data-slot"), attr(cell, "data-group"))
		}
		title := attr(cell, "title")
		if g == 1 && !strings.Contains(title, "leader node 3") {
			t.Fatalf("cell %d title %q", i, title)
		}
		if g == 2 && !strings.Contains(title, "NO LIVE LEADER") {
			t.Fatalf("cell %d title %q", i, title)
		}
	}
	if title := attr(cells[200], "title"); !strings.Contains(title, "migrating to group 1 (task 9)") || !strings.Contains(text(cells[200]), "⇄1") {
		t.Fatalf("migrating cell: %q %q", title, text(cells[200]))
	}
}

// ---- handler tests with the shared fake operator ----

// newFake is node 1 of the shared fake's cluster, with the balancer's load
// and plan and a removal's refusal filled in.
func newFake() *operatortest.Fake {
	f := operatortest.New(1)
	f.Load = []slotstore.NodeLoad{{Node: 1, Reads: 120, Writes: 80, Replicas: 2, Leaders: 2}, {Node: 2, Replicas: 1}}
	f.Plan = slotstore.BalancePlan{Actions: []slotstore.BalanceAction{{Kind: slotstore.BalanceMoveReplica, Reason: "replica_count", Group: 1, From: 1, To: 2,
		Detail: "node 1 holds 2 replicas, node 2 0 (skew allowed 1)"}}, Balanced: []string{"leader_count"}}
	f.RemoveErr = errors.New("node 2 still holds 1 replicas; drain it first")
	return f
}

// leaderOf is group g's leader as the fake holds it.
func leaderOf(t *testing.T, f *operatortest.Fake, g slotstore.GroupID) slotstore.NodeID {
	t.Helper()
	v, err := f.Group(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	return v.Leader
}

const (
	adminTok = "admin-token-0123456789"
	readTok  = "read-token-0123456789"
)

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func TestActionsNeedAdminAndReadsNeedRead(t *testing.T) {
	f := newFake()
	authn, err := auth.New(map[string]auth.Role{adminTok: auth.RoleAdmin, readTok: auth.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	sess := auth.NewSessions(auth.SessionsConfig{})
	ts := httptest.NewServer(Handler(Config{Source: f, Auth: authn, Audit: audit.New(f, nil), Sessions: sess}))
	defer ts.Close()
	cl := &http.Client{CheckRedirect: noRedirect}
	// cookie is the token a session is opened for (as a sign-in does).
	do := func(method, path, cookie string, form url.Values) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequest(method, ts.URL+path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: sess.Open(cookie)})
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	// Reads: no cookie → login; read cookie → page.
	if resp, _ := do("GET", "/console/groups", "", nil); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/login") {
		t.Fatalf("anonymous read: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := do("GET", "/console/groups", readTok, nil); resp.StatusCode != 200 || !strings.Contains(body, `data-testid="group-1"`) {
		t.Fatalf("read: %d", resp.StatusCode)
	}
	// Actions: no cookie and read cookie are refused, nothing happens.
	form := url.Values{"target": {"2"}}
	if resp, body := do("POST", "/console/groups/1/transfer", "", form); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `data-testid="refused"`) {
		t.Fatalf("anonymous action: %d", resp.StatusCode)
	}
	if resp, body := do("POST", "/console/groups/1/transfer", readTok, form); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "needs the admin role") {
		t.Fatalf("read-role action: %d %s", resp.StatusCode, body)
	}
	if f.Transfers() != 0 || leaderOf(t, f, 1) != 3 {
		t.Fatal("a refused action changed the leader")
	}
	// Admin without the confirmation: sent to the confirmation page, which
	// shows the preflight and the form that does it.
	resp, _ := do("POST", "/console/groups/1/transfer", adminTok, form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/groups/1/transfer?target=2" || leaderOf(t, f, 1) != 3 {
		t.Fatalf("unconfirmed action: %d %s leader %d", resp.StatusCode, resp.Header.Get("Location"), leaderOf(t, f, 1))
	}
	if resp, body := do("GET", "/console/groups/1/transfer?target=2", adminTok, nil); resp.StatusCode != 200 ||
		!strings.Contains(text(one(t, parse(t, body), "confirm-title")), "Transfer group 1's leadership to node 2?") || hasAttr(one(t, parse(t, body), "confirm"), "disabled") {
		t.Fatalf("confirmation page: %d %s", resp.StatusCode, body)
	}
	if _, body := do("GET", "/console/groups/1/moves?from=1&to=2", readTok, nil); !hasAttr(one(t, parse(t, body), "confirm"), "disabled") ||
		!strings.Contains(body, "Move group 1&#39;s replica from node 1 to node 2?") {
		t.Fatalf("a move's confirmation for the read role: %s", body)
	}
	// Admin, confirmed: done, POST-redirect-GET with the outcome shown once.
	form.Set("confirm", "yes")
	resp, _ = do("POST", "/console/groups/1/transfer", adminTok, form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/groups/1" || leaderOf(t, f, 1) != 2 {
		t.Fatalf("admin action: %d %s leader %d", resp.StatusCode, resp.Header.Get("Location"), leaderOf(t, f, 1))
	}
	var flash *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == flashCookie {
			flash = c
		}
	}
	if flash == nil {
		t.Fatal("no flash")
	}
	req, _ := http.NewRequest("GET", ts.URL+"/console/groups/1", nil)
	req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: sess.Open(adminTok)})
	req.AddCookie(flash)
	r2, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	if got := text(one(t, parse(t, string(b)), "flash")); !strings.Contains(got, "from node 3 to node 2") {
		t.Fatalf("flash: %q", got)
	}
	// A cross-origin POST is refused even with the admin cookie.
	req, _ = http.NewRequest("POST", ts.URL+"/console/groups/1/transfer", strings.NewReader("target=3"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: sess.Open(adminTok)})
	r3, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r3.Body.Close()
	if r3.StatusCode != http.StatusForbidden || leaderOf(t, f, 1) != 2 {
		t.Fatalf("cross-origin action: %d, leader %d", r3.StatusCode, leaderOf(t, f, 1))
	}
	// The audit trail has the denied and the done action, with names; the
	// anonymous and the cross-origin attempts never reached an identity.
	trail := f.AuditTrail()
	if len(trail) != 3 || trail[0].Outcome != slotstore.AuditDenied || !strings.HasPrefix(trail[0].Who, "read-token-") ||
		trail[1].Outcome != slotstore.AuditRefused || !strings.Contains(trail[1].Detail, "confirm") ||
		trail[2].Outcome != slotstore.AuditOK || trail[2].Role != "admin" || trail[2].Action != "console POST /console/groups/{id}/transfer" ||
		trail[2].Target != "/console/groups/1/transfer" || !strings.Contains(trail[2].Detail, "to node 2") {
		t.Fatalf("audit trail: %+v", trail)
	}
	if resp, body := do("GET", "/console/audit", adminTok, nil); resp.StatusCode != 200 || strings.Count(body, `data-testid="audit-row"`) != 3 {
		t.Fatalf("audit page: %d %s", resp.StatusCode, body)
	}
	if resp, _ := do("GET", "/console/audit", readTok, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("audit page with the read role: %d, want 403 (the trail is for administrators)", resp.StatusCode)
	}
}

func TestLoginSetsAStrictHttpOnlyCookie(t *testing.T) {
	authn, _ := auth.New(map[string]auth.Role{adminTok: auth.RoleAdmin})
	ts := httptest.NewServer(Handler(Config{Source: newFake(), Auth: authn}))
	defer ts.Close()
	cl := &http.Client{CheckRedirect: noRedirect}
	resp, err := cl.PostForm(ts.URL+"/console/login", url.Values{"token": {"wrong-token-0123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad token: %d", resp.StatusCode)
	}
	resp, err = cl.PostForm(ts.URL+"/console/login", url.Values{"token": {adminTok}, "next": {"/console/groups"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/groups" {
		t.Fatalf("login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == auth.SessionCookie {
			ck = c
		}
	}
	if ck == nil || ck.Value == adminTok || len(ck.Value) < 40 || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure {
		t.Fatalf("cookie %+v: a session id (never the token), HttpOnly, SameSite=Strict", ck)
	}
	if safeNext("//evil.example/x") != "/console" || safeNext("https://evil.example") != "/console" {
		t.Fatal("open redirect")
	}

	// Over HTTPS the cookie is Secure; a source that fails too often waits
	// (429 with Retry-After), even with the right token.
	lim := auth.NewLimiter(auth.LimiterConfig{Rate: 0.001, Burst: 2})
	tls := httptest.NewTLSServer(Handler(Config{Source: newFake(), Auth: authn, Limiter: lim}))
	defer tls.Close()
	tcl := tls.Client()
	tcl.CheckRedirect = noRedirect
	post := func(tok string) *http.Response {
		t.Helper()
		resp, err := tcl.PostForm(tls.URL+"/console/login", url.Values{"token": {tok}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp = post(adminTok)
	ck = nil
	for _, c := range resp.Cookies() {
		if c.Name == auth.SessionCookie {
			ck = c
		}
	}
	if ck == nil || !ck.Secure {
		t.Fatalf("cookie over HTTPS: %+v", ck)
	}
	for range 2 {
		if resp := post("wrong-token-0123456789"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bad token: %d", resp.StatusCode)
		}
	}
	if resp := post(adminTok); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("after the failures: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestPagesRenderWithoutAuthAndServeAssets(t *testing.T) {
	ts := httptest.NewServer(Handler(Config{Source: newFake()}))
	defer ts.Close()
	for _, p := range []string{"/console", "/console/slots", "/console/groups", "/console/groups/1", "/console/tasks", "/console/decisions",
		"/console/fragments/overview", "/console/fragments/slots", "/console/fragments/groups", "/console/fragments/groups/1",
		"/console/fragments/tasks", "/console/fragments/decisions", "/console/login", "/console/static/console.css", "/console/static/htmx.min.js",
		"/console/fragments/groups/1/changes", "/console/charts", "/console/fragments/charts", "/console/heat", "/console/heat?by=reads", "/console/channels", "/console/channels/2/room-1/changes", "/console/fragments/channels/2/room-1/changes"} {
		resp, err := http.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", p, resp.StatusCode, b)
		}
		if strings.HasPrefix(p, "/console/fragments/") && strings.Contains(string(b), "<html") {
			t.Fatalf("%s: a fragment renders a full page", p)
		}
	}
	resp, err := http.Get(ts.URL + "/console/groups")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	doc := parse(t, string(b))
	if len(byTestID(doc, "group-1")) != 1 || !strings.Contains(string(b), `hx-get="/console/fragments/groups"`) || !strings.Contains(string(b), `hx-trigger="every 2s"`) {
		t.Fatal("the groups page lacks its live fragment")
	}
	if !strings.Contains(string(b), "width:") && !strings.Contains(string(b), "style=") {
		t.Log("no lag bars rendered (no replicas in the fake)")
	}
}

func TestHealthShownAsItIs(t *testing.T) {
	// Nodes: as the controller leader observes them.
	op := OverviewProps{Now: now, Nodes: []NodeRow{
		{NodeInfo: slotstore.NodeInfo{ID: 1, State: "active"}, Health: slotstore.NodeHealth{Node: 1, Health: slotstore.NodeReachable, ReportAgeMs: 300}},
		{NodeInfo: slotstore.NodeInfo{ID: 2, State: "active"}, Health: slotstore.NodeHealth{Node: 2, Health: slotstore.NodeUnreachable, ReportAgeMs: 7000}},
		{NodeInfo: slotstore.NodeInfo{ID: 3, State: "active"}, Health: slotstore.NodeHealth{Node: 3, Health: slotstore.NodeUnknown, ReportAgeMs: -1}},
	}}
	doc := render(t, OverviewBody(op))
	for id, want := range map[string]string{"node-1": "reachable", "node-2": "unreachable", "node-3": "unknown"} {
		h := one(t, one(t, doc, id), "node-health")
		if got := text(h); !strings.Contains(got, want) || id != "node-2" && strings.Contains(got, "unreachable") {
			t.Fatalf("%s health: %q, want %q", id, got, want)
		}
	}
	if got := text(one(t, doc, "node-2")); !strings.Contains(got, "report 7.0s old") {
		t.Fatalf("node 2 row lacks its report age: %q", got)
	}
	// Groups: fewer live voters than desired peers is under-replicated.
	peers := []slotstore.DesiredPeer{{Node: 1, ReplicaID: 1}, {Node: 2, ReplicaID: 2}, {Node: 3, ReplicaID: 3}}
	gp := GroupsProps{Now: now, Groups: []slotstore.GroupView{
		{ID: 1, Leader: 1, DesiredPeers: peers, Health: slotstore.GroupHealthy, LiveVoters: 3},
		{ID: 2, Leader: 1, DesiredPeers: peers, Health: slotstore.GroupUnderReplicated, LiveVoters: 2, Replicas: []slotstore.ReplicaView{
			{Node: 1, Role: slotstore.RoleVoter, Live: true, HeardAgoMs: 0},
			{Node: 2, Role: slotstore.RoleVoter, Live: false, HeardAgoMs: 4200, Disruption: "no_leader", DisruptedAgoMs: 0},
			{Node: 4, Role: slotstore.RoleLearner, HeardAgoMs: 100, SnapshotBytes: 3 << 29}}},
	}}
	doc = render(t, GroupsTable(gp))
	if got := text(one(t, one(t, doc, "group-1"), "group-health")); got != "healthy" {
		t.Fatalf("group 1 health: %q", got)
	}
	if got := text(one(t, one(t, doc, "group-2"), "group-health")); !strings.Contains(got, "under-replicated (2 of 3 voters live)") {
		t.Fatalf("group 2 health: %q", got)
	}
	page := render(t, GroupLive(GroupProps{Found: true, Now: now, Group: gp.Groups[1]}))
	r2 := one(t, page, "replica-2")
	if got := text(r2); !strings.Contains(got, "not live") || !strings.Contains(got, "no_leader") || !strings.Contains(text(one(t, r2, "heard")), "4.2s ago") {
		t.Fatalf("replica 2 row: %q", got)
	}
	// A learner receiving its snapshot shows how much has arrived; a
	// replica that received none shows a dash.
	if got := text(one(t, one(t, page, "replica-4"), "snapshots-in")); got != "1.5 GiB" {
		t.Fatalf("learner's snapshots in: %q", got)
	}
	if got := text(one(t, r2, "snapshots-in")); got != "—" {
		t.Fatalf("replica 2's snapshots in: %q", got)
	}
}

// TestSplitFormSendsItsSlotsAndRefusesBadOnes: the split form's hash slots
// reach the node as typed; a slot out of range is refused on the page and
// nothing is asked of the node.
func TestSplitFormSendsItsSlotsAndRefusesBadOnes(t *testing.T) {
	f := newFake()
	authn, err := auth.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(Handler(Config{Source: f, Auth: authn}))
	defer ts.Close()
	post := func(slots string) string {
		t.Helper()
		return postFlash(t, ts.URL+"/console/groups/1/split", url.Values{"slots": {slots}})
	}
	if fl := post("300"); !strings.Contains(fl, "want numbers below 256") {
		t.Fatalf("flash for slot 300: %q", fl)
	}
	if fl := post("5, 6"); !strings.Contains(fl, "Task 1 started: move 2 hash slots of group 1 into new group 3") {
		t.Fatalf("flash for slots 5,6: %q", fl)
	}
	if splits := f.Splits(); len(splits) != 1 || len(splits[0]) != 2 || splits[0][0] != 5 || splits[0][1] != 6 {
		t.Fatalf("splits asked of the node: %v", splits)
	}
}

// TestBalancerPageShowsPlanLoadAndDrains: the page shows the plan with its
// reasons, each node's load, and a drain's progress; pause, drain and a
// refused removal go to the node and come back as flashes.
func TestBalancerPageShowsPlanLoadAndDrains(t *testing.T) {
	f := newFake()
	authn, err := auth.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(Handler(Config{Source: f, Auth: authn}))
	defer ts.Close()
	post := func(path string, form url.Values) string {
		t.Helper()
		return postFlash(t, ts.URL+path, form)
	}
	if fl := post("/console/balancer", url.Values{"paused": {"true"}}); !strings.Contains(fl, "paused") || !paused(t, f) {
		t.Fatalf("pause: flash %q, paused %v", fl, paused(t, f))
	}
	if fl := post("/console/balancer", url.Values{"paused": {"maybe"}}); !strings.Contains(fl, "want true or false") {
		t.Fatalf("bad pause value: %q", fl)
	}
	f.Pins = []slotstore.GroupPin{{Group: 3, UntilMs: now.Add(time.Hour).UnixMilli(), Why: "split", AtMs: now.UnixMilli()}}
	c0 := &console{src: f, now: func() time.Time { return now }}
	pins := byTestID(render(t, BalancerLive(balancerPages{c0}.balancer(context.Background(), true))), "pin-3")
	if len(pins) != 1 || !strings.Contains(text(pins[0]), "split") || !strings.Contains(text(pins[0]), "Release") {
		t.Fatalf("pins shown: %d", len(pins))
	}
	if fl := post("/console/balancer", url.Values{"release": {"3"}}); !strings.Contains(fl, "Group 3's pin is released") {
		t.Fatalf("release: flash %q", fl)
	}
	if st, _ := f.Balancer(context.Background()); len(st.Pins) != 0 {
		t.Fatalf("pins after the release: %v", st.Pins)
	}
	if fl := post("/console/balancer", url.Values{"release": {"x"}}); !strings.Contains(fl, "want a group id") {
		t.Fatalf("bad release: %q", fl)
	}
	if fl := post("/console/nodes/2/drain", nil); !strings.Contains(fl, "Node 2 drains its 2 replicas") {
		t.Fatalf("drain: %q", fl)
	}
	if fl := post("/console/nodes/2/remove", nil); !strings.Contains(fl, "Removing node 2 refused: node 2 still holds") {
		t.Fatalf("remove: %q", fl)
	}
	c := &console{src: f, now: func() time.Time { return now }}
	doc := render(t, BalancerLive(balancerPages{c}.balancer(context.Background(), true)))
	if got := text(byTestID(doc, "balancer-mode")[0]); got != "paused" {
		t.Fatalf("mode %q", got)
	}
	plan := text(byTestID(doc, "plan")[0])
	if !strings.Contains(plan, "move_replica") || !strings.Contains(plan, "replica_count") || !strings.Contains(plan, "node 1 holds 2 replicas") {
		t.Fatalf("plan: %q", plan)
	}
	row := text(byTestID(doc, "node-row-1")[0])
	if !strings.Contains(row, "120") || !strings.Contains(row, "80") {
		t.Fatalf("node 1 row: %q", row)
	}
	if got := text(byTestID(doc, "drain-progress")[0]); !strings.Contains(got, "50 % · 1 of 2 replicas left · about 4s left") {
		t.Fatalf("drain progress: %q", got)
	}
}

// postFlash posts form to u, expects the action's redirect and returns the
// flash message it set.
func postFlash(t *testing.T, u string, form url.Values) string {
	t.Helper()
	cl := &http.Client{CheckRedirect: noRedirect}
	resp, err := cl.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST %s: %d", u, resp.StatusCode)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == flashCookie {
			v, _ := url.QueryUnescape(ck.Value)
			return v
		}
	}
	return ""
}

// TestInsecureBanner: a node that runs --insecure says so on every page,
// naming what it exposes; a secured node shows no banner — unless it has a
// warning of its own (a certificate about to expire).
func TestInsecureBanner(t *testing.T) {
	for _, insecure := range []bool{true, false} {
		st := slotstore.SecurityStatus{Insecure: insecure}
		if insecure {
			st.Warnings = []string{"Raft and peer RPC on 10.0.0.1:9080 would accept connections from anyone who reaches them"}
		}
		ts := httptest.NewServer(Handler(Config{Source: newFake(), Security: func() slotstore.SecurityStatus { return st }}))
		for _, p := range []string{"/console", "/console/groups", "/console/audit"} {
			resp, err := http.Get(ts.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			banners := byTestID(parse(t, string(b)), "insecure-banner")
			if insecure && (len(banners) != 1 || !strings.Contains(text(banners[0]), "10.0.0.1:9080")) {
				t.Fatalf("%s: no banner naming the exposure: %s", p, b)
			}
			if !insecure && len(banners) != 0 {
				t.Fatalf("%s: a banner on a secured node", p)
			}
			if !insecure && len(byTestID(parse(t, string(b)), "security-warning")) != 0 {
				t.Fatalf("%s: a security warning without one", p)
			}
		}
		ts.Close()
	}
	st := slotstore.SecurityStatus{Warnings: []string{"the node certificate expires on 2026-12-11, in 10 days"}}
	ts := httptest.NewServer(Handler(Config{Source: newFake(), Security: func() slotstore.SecurityStatus { return st }}))
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/console")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if w := byTestID(parse(t, string(b)), "security-warning"); len(w) != 1 || !strings.Contains(text(w[0]), "in 10 days") {
		t.Fatalf("an expiring certificate is not shown: %s", b)
	}
}

// TestNoTokenOracle: a page that needs no role never says whether the token
// it was sent is valid (only the limiter's guarded check may look a token
// up); a fragment polled with a cookie whose token no longer works gets
// htmx's stop-polling status and the cookie cleared.
func TestNoTokenOracle(t *testing.T) {
	authn, _ := auth.New(map[string]auth.Role{adminTok: auth.RoleAdmin})
	sess := auth.NewSessions(auth.SessionsConfig{})
	ts := httptest.NewServer(Handler(Config{Source: newFake(), Auth: authn, Limiter: auth.NewLimiter(auth.LimiterConfig{}), Sessions: sess}))
	defer ts.Close()
	page := func(token string) string {
		req, _ := http.NewRequest("GET", ts.URL+"/console/login", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return text(one(t, parse(t, string(b)), "session"))
	}
	if good, bad := page(adminTok), page("guess-token-0123456789"); good != bad || strings.Contains(good, "signed in") {
		t.Fatalf("the login page tells tokens apart: %q vs %q", good, bad)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/console/fragments/groups", nil)
	req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: sess.Open("rotated-away-token-0123")})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || (c.Name == auth.SessionCookie && c.MaxAge < 0)
	}
	if resp.StatusCode != htmxStopPolling || !cleared {
		t.Fatalf("a stale cookie on a fragment: %d, cookie cleared %v", resp.StatusCode, cleared)
	}
}

// TestPagesCarrySecurityHeaders: every console answer — page, fragment,
// static file, refusal — says where its content may come from and that no
// other site may frame it.
func TestPagesCarrySecurityHeaders(t *testing.T) {
	ts := httptest.NewServer(Handler(Config{Source: newFake()}))
	defer ts.Close()
	for _, path := range []string{"/console", "/console/groups", "/console/fragments/overview", "/console/static/htmx.min.js", "/console/login", "/console/nope"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") == "" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d headers %v", path, resp.StatusCode, h)
		}
	}
}

// TestQuorumLostShowsTheLocalView: on a node whose controller lost its
// quorum (no controller leader answers), the overview shows the group
// counts and the nodes' replica counts as unknown — never a green 0 — and
// the node's own replicas with the leader each knows; the balancer page
// says no controller leader answers, not that the balancer is turned off.
func TestQuorumLostShowsTheLocalView(t *testing.T) {
	f := newFake()
	f.NoControllerLeader = true
	f.Local = []slotstore.LocalReplica{
		{Group: 0, ReplicaID: 1, Role: slotstore.RoleVoter, Term: 4, AppliedIndex: 90, LogLast: 91},
		{Group: 2, ReplicaID: 7, Role: slotstore.RoleVoter, Leader: 3, Term: 6, AppliedIndex: 40, LogLast: 40},
	}
	c := &console{src: f, now: time.Now}
	doc := render(t, OverviewFragment(overviewPages{c}.overview(context.Background())))
	for _, id := range []string{"groups-with-leader", "groups-without-leader"} {
		if got := text(byTestID(doc, id)[0]); !strings.HasPrefix(got, "unknown") {
			t.Fatalf("%s: %q, want unknown", id, got)
		}
	}
	if rows := byTestID(doc, "node-1"); len(rows) != 1 || !strings.Contains(text(rows[0]), "?") {
		t.Fatalf("node 1's row without the groups' views: %v", rows)
	}
	ctrl, g2 := byTestID(doc, "local-0"), byTestID(doc, "local-2")
	if len(ctrl) != 1 || !strings.Contains(text(ctrl[0]), "controller") || !strings.Contains(text(ctrl[0]), "none") {
		t.Fatalf("the controller's local row: %v", ctrl)
	}
	if len(g2) != 1 || !strings.Contains(text(g2[0]), "node 3") || !strings.Contains(text(g2[0]), "40") {
		t.Fatalf("group 2's local row: %q", text(g2[0]))
	}
	bal := render(t, BalancerLive(balancerPages{c}.balancer(context.Background(), true)))
	if got := text(byTestID(bal, "balancer-mode")[0]); !strings.Contains(got, "no controller leader") {
		t.Fatalf("balancer mode %q", got)
	}
}

// TestDecisionLogFoldsTaskSteps: a task's phase steps fold under its
// newest (a split is a row, not one per step); a decision whose leader is
// no input of it (a task step, a balancer action) shows no leader as "—",
// not as a group without a leader; a reconciler's skip for a group without
// a leader still says so.
func TestDecisionLogFoldsTaskSteps(t *testing.T) {
	at := int64(1_800_000_000_000)
	ds := []slotstore.Decision{
		{AtMs: at, Group: 1, Kind: slotstore.DecisionTask, Reason: "group_split:copy→switch"},
		{AtMs: at + 1, Group: 1, Kind: slotstore.DecisionTask, Reason: "group_split:switch→drain"},
		{AtMs: at + 2, Group: 1, Kind: slotstore.DecisionTask, Reason: "group_split:drain→done"},
		{AtMs: at + 3, Group: 2, Kind: slotstore.DecisionBalance, Reason: "replica_count"},
		{AtMs: at + 4, Group: 3, Kind: slotstore.DecisionSkip, Reason: "no_leader"},
	}
	rows := foldDecisions(ds)
	if len(rows) != 3 || rows[2].Reason != "group_split:drain→done" || len(rows[2].Folded) != 2 || rows[0].Group != 3 {
		t.Fatalf("rows %+v", rows)
	}
	doc := render(t, DecisionTable(DecisionsProps{Decisions: rows, Now: time.UnixMilli(at + 10)}))
	table := text(byTestID(doc, "decisions")[0])
	if strings.Count(table, "no leader") != 1 || !strings.Contains(table, "—") || !strings.Contains(table, "2 earlier steps of this task") {
		t.Fatalf("decision table: %q", table)
	}
}

// TestFooterShowsTheVersion: every page's footer names the node's version.
func TestFooterShowsTheVersion(t *testing.T) {
	ts := httptest.NewServer(Handler(Config{Source: newFake(), Version: "v9.8.7 (go1.26)"}))
	defer ts.Close()
	for _, page := range []string{"/console", "/console/balancer", "/console/decisions"} {
		resp, body := get(t, ts, nil, "", page)
		if resp.StatusCode != 200 || !strings.Contains(body, "slotmeta v9.8.7 (go1.26)") {
			t.Fatalf("%s: %d, no version in the footer", page, resp.StatusCode)
		}
	}
}

func paused(t *testing.T, f *operatortest.Fake) bool {
	t.Helper()
	st, err := f.Balancer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Paused
}

// TestGroupPagesFallBackToTheNodesOwnView (issue 54, item 2): when no view
// of the groups comes (no controller leader answers), the groups page and
// a group's page show this node's own replicas — role, the leader each
// knows, applied — and say where they come from; a group the node holds no
// replica of says so.
func TestGroupPagesFallBackToTheNodesOwnView(t *testing.T) {
	local := []slotstore.LocalReplica{{Group: 1, ReplicaID: 4, Role: "follower", Leader: 0, Term: 7, AppliedIndex: 120, LogLast: 121},
		{Group: 3, ReplicaID: 9, Role: "leader", Leader: 2, Term: 3, AppliedIndex: 55, LogLast: 55}}
	gp := render(t, GroupsTable(GroupsProps{Now: now, Err: "no controller leader answers", Node: 2, Local: local}))
	if got := text(one(t, gp, "local-groups-note")); !strings.Contains(got, "No controller leader answers") || !strings.Contains(got, "node 2 knows itself") {
		t.Fatalf("the note: %q", got)
	}
	if got := text(one(t, gp, "local-group-1")); !strings.Contains(got, "g1") || !strings.Contains(got, "follower") || !strings.Contains(got, "none") || !strings.Contains(got, "120") {
		t.Fatalf("group 1's row: %q", got)
	}
	if got := text(one(t, gp, "local-group-3")); !strings.Contains(got, "leader") || !strings.Contains(got, "55") {
		t.Fatalf("group 3's row: %q", got)
	}
	if ns := byTestID(render(t, GroupsTable(GroupsProps{Now: now})), "local-groups"); len(ns) != 0 {
		t.Fatal("the node's own view shown while the controller answers")
	}
	one3 := render(t, GroupLive(GroupProps{Now: now, Err: "no controller leader answers", Node: 2, Local: &local[1]}))
	if got := text(one(t, one3, "local-group")); !strings.Contains(got, "leader") || !strings.Contains(got, "55") {
		t.Fatalf("group 3's page: %q", got)
	}
	none := render(t, GroupLive(GroupProps{Now: now, Err: "no controller leader answers", Node: 2}))
	if got := text(one(t, none, "local-group-note")); !strings.Contains(got, "holds no replica") {
		t.Fatalf("a group the node does not hold: %q", got)
	}
}

// TestOverviewShowsWhoTheNodeHears (issue 54, item 2): the overview lists
// every other node as this node's own Raft transport sees it.
func TestOverviewShowsWhoTheNodeHears(t *testing.T) {
	up, down := true, false
	sum := slotstore.ClusterSummary{NodeID: 1, Peers: []slotstore.PeerView{{Node: 2, HeardAgoMs: 40, Connected: &up},
		{Node: 3, HeardAgoMs: 9000, Connected: &down}, {Node: 4, HeardAgoMs: -1}}}
	ov := render(t, OverviewBody(OverviewProps{Now: now, Summary: sum}))
	for id, want := range map[string][]string{"peer-2": {"ago", "up"}, "peer-3": {"⚠", "failed"}, "peer-4": {"never", "not tried"}} {
		got := text(one(t, ov, id))
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Fatalf("%s: %q lacks %q", id, got, w)
			}
		}
	}
}

// TestHotSlotsAreNamed (issue 54, item 3): a hash slot the balancer's plan
// names as too hot for any group shows on the balancer page and on the
// heat map page, with its load over the mean.
func TestHotSlotsAreNamed(t *testing.T) {
	hot := []slotstore.HotSlot{{Slot: 37, Group: 2, OpsPerSec: 3000, OfMean: 2.94}}
	plan := slotstore.BalancePlan{Held: "hash slot 37 of group 2 alone carries 3000 ops/s", HeldReason: "hot_slot", Hot: hot}
	bp := render(t, BalancerLive(BalancerProps{Now: now, Plan: plan}))
	if got := text(one(t, bp, "unspreadable-37")); !strings.Contains(got, "g2") || !strings.Contains(got, "3000") || !strings.Contains(got, "2.94") {
		t.Fatalf("the balancer page's row: %q", got)
	}
	if got := text(one(t, bp, "plan-held")); !strings.Contains(got, "hash slot 37") {
		t.Fatalf("the balancer page's wait: %q", got)
	}
	hp := render(t, HeatBody(HeatProps{Now: now, Unspreadable: hot}))
	if got := text(one(t, hp, "unspreadable-37")); !strings.Contains(got, "3000") {
		t.Fatalf("the heat page's row: %q", got)
	}
	if ns := byTestID(render(t, HeatBody(HeatProps{Now: now})), "hot-unspreadable"); len(ns) != 0 {
		t.Fatal("a hot-slot table with none")
	}
}
