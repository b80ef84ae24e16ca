package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta"
	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/console"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller/balance"
	"github.com/slotmeta/slotmeta/internal/httpapi"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

const (
	consoleAdminToken = "console-admin-token-0123456789"
	consoleReadToken  = "console-read-token-0123456789"
)

// serveConsole serves n through the real API handler with the console
// mounted and access control on (an admin and a read token).
// signIn signs in to the console at base with token and returns the
// session cookie (a random session id: the token is never a cookie); a token
// the console refuses gets a cookie naming no session.
func signIn(t *testing.T, base, token string) *http.Cookie {
	t.Helper()
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", base+"/console/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == auth.SessionCookie && c.Value != "" {
			return c
		}
	}
	return &http.Cookie{Name: auth.SessionCookie, Value: "no-such-session"}
}

func serveConsole(t *testing.T, n *cluster.Node) string {
	t.Helper()
	return serveConsoleOn(t, n, nil)
}

// serveConsoleOn is serveConsole with the API's metrics on reg (nil: a
// registry of its own): the node's registry, as cmd/server shares it, for
// the charts' latency and errors.
func serveConsoleOn(t *testing.T, n *cluster.Node, reg *prometheus.Registry) string {
	t.Helper()
	authn, err := auth.New(map[string]auth.Role{consoleAdminToken: auth.RoleAdmin, consoleReadToken: auth.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.New(n, nil)
	return slotstoretest.ServeAPI(t, n, func(cfg *httpapi.Config) {
		cfg.OpenAPI, cfg.Auth, cfg.Audit, cfg.Docs = slotmeta.OpenAPI, authn, rec, console.Docs()
		cfg.Console = func(api http.Handler) http.Handler {
			return console.Handler(console.Config{Source: n.Operator(), Auth: authn, Audit: rec, Changes: n.Watches().Log, API: api})
		}
		if reg != nil {
			cfg.Registerer, cfg.Gatherer = reg, reg
		}
	}).URL
}

// apiGroups reads GET /v1/cluster/groups with the admin token.
func apiGroups(t *testing.T, base string) map[int32]client.GroupView {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/cluster/groups", nil)
	req.Header.Set("Authorization", "Bearer "+consoleAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out client.GroupList
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/cluster/groups: %d %v", resp.StatusCode, err)
	}
	m := map[int32]client.GroupView{}
	for _, g := range out.Items {
		m[g.Id] = g
	}
	return m
}

func TestConsoleActionWithoutAdminIsRefused(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2})
	base := serveConsole(t, c.Nodes[0])
	before := waitObservedLeaders(t, base)[1]
	var target int64
	for _, v := range before.Voters {
		if v != before.Leader {
			target = v
			break
		}
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		name, cookie string
		want         int
	}{{"no cookie", "", http.StatusUnauthorized}, {"read role", consoleReadToken, http.StatusForbidden}, {"bad token", "not-a-token-0123456789", http.StatusUnauthorized}} {
		req, _ := http.NewRequest("POST", base+"/console/groups/1/transfer", strings.NewReader(url.Values{"target": {fmt.Sprintf("%d", target)}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		if tc.cookie != "" {
			req.AddCookie(signIn(t, base, tc.cookie))
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(string(body), `data-testid="refused"`) {
			t.Fatalf("%s: %d, want %d: %s", tc.name, resp.StatusCode, tc.want, body)
		}
	}
	time.Sleep(500 * time.Millisecond) // a hold, not a wait: a refused transfer carried out anyway would show by then
	after := apiGroups(t, base)[1]
	if after.Leader != before.Leader || after.Term != before.Term {
		t.Fatalf("a refused transfer changed group 1: leader %d term %d → leader %d term %d", before.Leader, before.Term, after.Leader, after.Term)
	}
}

// waitObservedLeaders waits until the aggregated view shows a leader for
// every group (it lags readiness by an observation round).
func waitObservedLeaders(t *testing.T, base string) map[int32]client.GroupView {
	t.Helper()
	var gs map[int32]client.GroupView
	testutil.WaitFor(t, 20*time.Second, 200*time.Millisecond, func() (bool, string) {
		gs = apiGroups(t, base)
		ok := len(gs) > 0
		for _, g := range gs {
			ok = ok && g.Leader != 0 && len(g.Voters) > 1
		}
		return ok, "no observed leader for every group: " + js(gs)
	})
	return gs
}

func artifactsDir(t *testing.T) string {
	if d := os.Getenv("SLOTMETA_ARTIFACTS"); d != "" {
		d = filepath.Join(d, "console")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// browser starts a headless Chromium for t (stopped with it) and returns
// its context, a screenshot taker (into dir) and a runner of steps that
// fails t with what it was doing.
func browser(t *testing.T, dir string) (context.Context, func(name string), func(what string, steps ...chromedp.Action[chromedp.Void])) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("the browser test needs Chromium at %s (Debian package chromium; .ci/run installs it): %v", chromiumPath, err)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1500, 1000),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(cancelCtx)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	return ctx, shot, do
}

const chromiumPath = "/usr/bin/chromium"

// waitOnPage opens base+page until the text of sel holds want (30 s at
// most), and fails t with a screenshot otherwise.
func waitOnPage(t *testing.T, ctx context.Context, shot func(string), base, what, page, sel, want string) {
	t.Helper()
	if state, ok := testutil.Eventually(30*time.Second, 300*time.Millisecond, func() (bool, string) {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+page)); err != nil {
			return false, fmt.Sprintf("%s: open %s: %v", what, page, err)
		}
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		return err == nil && strings.Contains(s, want), fmt.Sprintf("%s: %q (err %v), want %q", what, s, err, want)
	}); !ok {
		shot(strings.ReplaceAll(what, " ", "-"))
		t.Fatal(state)
	}
}

func TestConsoleInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("the browser test needs Chromium at %s (Debian package chromium; .ci/run installs it): %v", chromiumPath, err)
	}
	// The preferred-leader intent is stale at once, so the reconciler does
	// not move the transferred leadership back (it logs stale_intent skips).
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2,
		Tune: func(cfg *cluster.Config) { cfg.Leadership.PreferredTTL = time.Nanosecond }})
	base := serveConsole(t, c.Nodes[0])
	shots := artifactsDir(t)
	waitObservedLeaders(t, base)

	ctx, shot, do := browser(t, shots)

	// Reading needs a token: the console sends us to the login form.
	do("open", chromedp.Navigate(base+"/console/groups"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)))
	shot("login")
	do("sign in",
		chromedp.SendKeys(chromedp.CSS(`#token`), consoleAdminToken),
		chromedp.Click(chromedp.CSS(`[data-testid=login-form] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=groups]`)))

	// The groups page shows the leaders and terms the API reports.
	type row struct{ Leader, Term string }
	readRows := func() map[string]row {
		t.Helper()
		js, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(Object.fromEntries(
			[...document.querySelectorAll('table[data-testid=groups] > tbody > tr')].map(tr =>
				[tr.dataset.testid.replace('group-',''), {Leader: tr.dataset.leader, Term: tr.querySelector('[data-testid=term]').textContent.trim()}])))`))
		if err != nil {
			t.Fatalf("read groups page: %v", err)
		}
		m := map[string]row{}
		if err := json.Unmarshal([]byte(js), &m); err != nil {
			t.Fatalf("read groups page: %v: %s", err, js)
		}
		return m
	}
	testutil.WaitFor(t, 15*time.Second, 300*time.Millisecond, func() (bool, string) {
		do("reload groups", chromedp.Navigate(base+"/console/groups"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=groups]`)))
		page, api := readRows(), apiGroups(t, base)
		mismatch := ""
		if len(page) != len(api) {
			mismatch = fmt.Sprintf("page has %d groups, API %d", len(page), len(api))
		}
		for id, g := range api {
			r := page[fmt.Sprintf("%d", id)]
			if r.Leader != fmt.Sprintf("%d", g.Leader) || r.Term != fmt.Sprintf("%d", g.Term) || g.Leader == 0 {
				mismatch += fmt.Sprintf("group %d: page leader %s term %s, API leader %d term %d; ", id, r.Leader, r.Term, g.Leader, g.Term)
			}
		}
		return mismatch == "", "groups page disagrees with the API: " + mismatch
	})
	shot("groups")

	// Live refresh: htmx re-fetches the groups fragment without a reload.
	stamp := func() string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`typeof htmx + ' ' + document.querySelector('#groups-live').textContent.match(/rendered (\S+ \S+)/)[1]`))
		if err != nil {
			t.Fatalf("read the fragment's render time: %v", err)
		}
		return s
	}
	first := stamp()
	if !strings.HasPrefix(first, "object ") {
		t.Fatalf("htmx is not loaded: %q", first)
	}
	testutil.WaitFor(t, 8*time.Second, 250*time.Millisecond, func() (bool, string) {
		return stamp() != first, fmt.Sprintf("the groups fragment was not refreshed (still %q)", first)
	})

	do("overview", chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=summary]`)))
	shot("overview")
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(location.href='/console/slots', 0)`))
	_ = cells
	if err != nil {
		t.Fatal(err)
	}
	do("slots", chromedp.WaitVisible(chromedp.CSS(`[data-testid=slot-grid]`)))
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=slot-cell]').length`))
	if err != nil || n != slotstore.HashSlotCount {
		t.Fatalf("slot grid: %d cells, %v", n, err)
	}
	shot("slots")

	// Leader transfer through the group page: wait for a safe preflight,
	// press its button, and see the new leader.
	before := apiGroups(t, base)[1]
	var target int64
	if _, ok := testutil.Eventually(20*time.Second, 500*time.Millisecond, func() (bool, string) {
		do("group page", chromedp.Navigate(base+"/console/groups/1"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=preflights]`)))
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
			const b = [...document.querySelectorAll('[data-testid^=transfer-]')].find(b => !b.disabled);
			return b ? b.dataset.testid.replace('transfer-','') : '';
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if id != "" {
			fmt.Sscan(id, &target)
		}
		return target != 0, ""
	}); !ok {
		shot("group-blocked")
		t.Fatal("no leader transfer of group 1 became safe within 20s")
	}
	if target == before.Leader {
		t.Fatalf("offered a transfer to the current leader %d", target)
	}
	shot("group-before-transfer")
	do("transfer",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-testid=transfer-%d]`, target))),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=confirm-page]`)))
	shot("confirm-transfer")
	do("confirm the transfer",
		chromedp.Click(chromedp.CSS(`[data-testid=confirm]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)))
	flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=flash]`)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("flash: %s", flash)
	rendered := false
	if state, ok := testutil.Eventually(15*time.Second, 300*time.Millisecond, func() (bool, string) {
		if rendered { // a fresh render, not only what the live refresh swapped in
			do("group page", chromedp.Navigate(base+"/console/groups/1"), chromedp.WaitVisible(chromedp.CSS(`dl[data-testid=group-1]`)))
		}
		leader, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('dl[data-testid=group-1]').dataset.leader`))
		if err != nil {
			t.Fatal(err)
		}
		rendered = true
		api := apiGroups(t, base)[1].Leader
		if leader == fmt.Sprintf("%d", target) && api == target {
			return true, ""
		}
		// On a loaded machine an election may move the leader on right after
		// the transfer (the flash already reports the transfer observed):
		// then the page must show what the API shows.
		if api != target && api != 0 && leader == fmt.Sprintf("%d", api) && strings.Contains(flash, fmt.Sprintf("to node %d", target)) {
			t.Logf("leadership moved on to node %d after the transfer; the page follows the API", api)
			return true, ""
		}
		return false, fmt.Sprintf("group 1's leader is %s on the page after the transfer to %d (flash %q)", leader, target, flash)
	}); !ok {
		shot("group-after-transfer-timeout")
		t.Fatal(state)
	}
	shot("group-after-transfer")

	do("tasks", chromedp.Navigate(base+"/console/tasks"), chromedp.WaitVisible(chromedp.CSS(`main`)))
	shot("tasks")
	do("decisions", chromedp.Navigate(base+"/console/decisions"), chromedp.WaitVisible(chromedp.CSS(`main`)))
	shot("decisions")
	t.Logf("screenshots in %s", shots)
}

// TestConsoleGroupTasksInBrowser: from the console, split two hash slots of
// group 1 into a new group, merge it back (which retires it), create an
// empty group and retire it; each action's task is followed on the tasks
// page until it succeeded, and the API agrees.
func TestConsoleGroupTasksInBrowser(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 1, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
	}})
	base := serveConsole(t, c.Nodes[0])
	shots := artifactsDir(t)
	ctx, shot, do := browser(t, shots)
	do("sign in", chromedp.Navigate(base+"/console/groups"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), consoleAdminToken),
		chromedp.Click(chromedp.CSS(`[data-testid=login-form] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=groups]`)))
	flash := func(want string) {
		t.Helper()
		do("flash", chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)))
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=flash]`)))
		if err != nil || !strings.Contains(got, want) {
			shot("flash-" + strings.ReplaceAll(want, " ", "-"))
			t.Fatalf("flash %q (err %v), want %q", got, err, want)
		}
	}
	// taskSucceeds follows task id on the tasks page until it shows succeeded.
	taskSucceeds := func(id string) {
		t.Helper()
		if state, ok := testutil.Eventually(30*time.Second, 200*time.Millisecond, func() (bool, string) {
			do("tasks", chromedp.Navigate(base+"/console/tasks"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=task-`+id+`]`)))
			st, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=task-`+id+`] [data-testid=task-status]`)))
			return err == nil && st == "succeeded", fmt.Sprintf("task %s is %q on the tasks page (err %v)", id, st, err)
		}); !ok {
			shot("task-" + id)
			t.Fatal(state)
		}
	}
	taskOf := func() string {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=flash]`)))
		if err != nil {
			t.Fatal(err)
		}
		var id int
		if _, err := fmt.Sscanf(got[strings.Index(got, "Task "):], "Task %d", &id); err != nil {
			t.Fatalf("no task in the flash %q", got)
		}
		return fmt.Sprint(id)
	}

	do("split", chromedp.Navigate(base+"/console/groups/1"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=split-form]`)),
		chromedp.SendKeys(chromedp.CSS(`#slots`), "5,6"),
		chromedp.Click(chromedp.CSS(`[data-testid=split-form] button`)))
	flash("move 2 hash slots of group 1 into new group 2")
	shot("split-started")
	taskSucceeds(taskOf())
	shot("split-done")
	if g := apiGroups(t, base)[2]; g.HashSlots != 2 {
		t.Fatalf("group 2 after the split from the console: %s", js(g))
	}

	do("merge", chromedp.Navigate(base+"/console/groups/2"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=merge-form]`)),
		chromedp.SetValue(chromedp.CSS(`#into`), "1"),
		chromedp.Click(chromedp.CSS(`[data-testid=merge-form] button`)))
	flash("then retire group 2")
	taskSucceeds(taskOf())
	if _, ok := apiGroups(t, base)[2]; ok {
		t.Fatal("group 2 is still listed after the merge from the console")
	}

	do("create", chromedp.Navigate(base+"/console/groups"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=create-group-form]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=create-group-form] button`)))
	flash("create group 3")
	taskSucceeds(taskOf())
	do("retire", chromedp.Navigate(base+"/console/groups/3"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=retire-form]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=retire-form] button`)))
	flash("Group 3 retired")
	shot("retired")
	if _, ok := apiGroups(t, base)[3]; ok {
		t.Fatal("group 3 is still listed after its retirement from the console")
	}
}

// TestConsoleBalancerInBrowser: in headless Chromium, the balancer page of a
// real 4-node cluster (one group on nodes 1–3, the balancer on) shows the
// balancer running and every node's load; the balancer pauses and resumes
// from the page; node 3 is drained from the page, its progress reaches done
// (its replica moved to node 4), and it is removed from the page.
func TestConsoleBalancerInBrowser(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 4, Groups: 1, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.DisableBalancer = false
		cfg.BalanceInterval = 200 * time.Millisecond
		cfg.Balancer = balance.Config{GroupsPerNode: -1}
	}})
	base := serveConsole(t, c.Nodes[0])
	ctx, shot, do := browser(t, artifactsDir(t))
	do("sign in", chromedp.Navigate(base+"/console/balancer"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), consoleAdminToken),
		chromedp.Click(chromedp.CSS(`[data-testid=login-form] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=balancer-state]`)))
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			shot("text")
			t.Fatalf("%s: %v", sel, err)
		}
		return s
	}
	waitText := func(what, sel, want string) {
		t.Helper()
		if state, ok := testutil.Eventually(30*time.Second, 200*time.Millisecond, func() (bool, string) {
			s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
			return err == nil && strings.Contains(s, want), fmt.Sprintf("%s: %q (err %v), want %q", what, s, err, want)
		}); !ok {
			shot(strings.ReplaceAll(what, " ", "-"))
			t.Fatal(state)
		}
	}
	if got := text(`[data-testid=balancer-mode]`); got != "running" {
		t.Fatalf("balancer mode %q", got)
	}
	for _, n := range []string{"1", "2", "3", "4"} {
		do("node row "+n, chromedp.WaitVisible(chromedp.CSS(`[data-testid=node-row-`+n+`]`)))
	}
	do("pause", chromedp.Click(chromedp.CSS(`[data-testid=balancer-state] button`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)))
	waitText("paused", `[data-testid=balancer-mode]`, "paused")
	do("resume", chromedp.Click(chromedp.CSS(`[data-testid=balancer-state] button`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)))
	waitText("running again", `[data-testid=balancer-mode]`, "running")

	do("drain node 3", chromedp.Click(chromedp.CSS(`[data-testid=node-row-3] form button`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)))
	waitText("drain flash", `[data-testid=flash]`, "Node 3 drains its 1 replicas")
	waitText("drain done", `[data-testid=node-row-3] [data-testid=drain-progress]`, "done")
	shot("drained")
	do("remove node 3", chromedp.Navigate(base+"/console/balancer"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=node-row-3] form button`)),
		chromedp.Click(chromedp.CSS(`[data-testid=node-row-3] form button`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)))
	waitText("remove flash", `[data-testid=flash]`, "Node 3 was removed from the cluster")
	for _, n := range c.Nodes[0].Operator().Nodes() {
		if n.ID == 3 && n.State != slotstore.NodeRemoved {
			t.Fatalf("node 3 after the removal from the console: %+v", n)
		}
	}
	// The audit page lists the four actions, newest first, with the
	// signed-in token's name.
	do("audit page", chromedp.Navigate(base+"/console/audit"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=audit]`)))
	trail := text(`[data-testid=audit]`)
	for _, want := range []string{"console POST /console/nodes/{id}/remove", "console POST /console/nodes/{id}/drain", "console POST /console/balancer", "admin-token-"} {
		if !strings.Contains(trail, want) {
			shot("audit")
			t.Fatalf("the audit page lacks %q:\n%s", want, trail)
		}
	}
	if strings.Index(trail, "/remove") > strings.Index(trail, "/drain") {
		t.Fatalf("the audit page is not newest first:\n%s", trail)
	}
}

// TestConsoleQuorumLostInBrowser is the quorum-lost part of "Must show 1"
// of issue 30: two of three nodes are killed; the survivor's console shows
// its outage — the group counts unknown, never a green 0 — its own
// replicas with the leader each knows (none: the others are gone — also
// for a group that was quiesced when they went, whose leader here steps
// down only once woken), on the
// overview and, in place of the controller's views, on the groups page and
// a group's page (issue 54), and the balancer page says no controller
// leader answers.
func TestConsoleQuorumLostInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("the browser test needs Chromium at %s: %v", chromiumPath, err)
	}
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2})
	base := serveConsole(t, c.Nodes[0])
	ctx, shot, do := browser(t, artifactsDir(t))
	do("sign in", chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), consoleReadToken),
		chromedp.Click(chromedp.CSS(`[data-testid=login-form] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=summary]`)))
	// Group 1 idle until it quiesces (its leader, node 1, hears nothing from
	// its followers): a quiesced leader checks its quorum only once
	// something wakes it (the node does, while its controller knows no
	// leader).
	testutil.WaitFor(t, 15*time.Second, 50*time.Millisecond, func() (bool, string) {
		quiet := func(n slotstore.NodeID) bool {
			ago, ok := c.Nodes[0].Testing().HeardAgo(1, n)
			return ok && ago > time.Second
		}
		return quiet(2) && quiet(3), "group 1 does not quiesce"
	})
	c.StopNode(1)
	c.StopNode(2)
	waitText := func(what, page, sel, want string) { t.Helper(); waitOnPage(t, ctx, shot, base, what, page, sel, want) }
	waitText("groups unknown", "/console", `[data-testid=groups-with-leader]`, "unknown")
	waitText("no green 0", "/console", `[data-testid=groups-without-leader]`, "unknown")
	waitText("the controller's own replica knows no leader", "/console", `[data-testid=local-0]`, "none")
	waitText("group 1's own replica", "/console", `[data-testid=local-1]`, "g1")
	shot("quorum-lost-overview")
	waitText("the groups page shows the node's own replicas", "/console/groups", `[data-testid=local-group-1]`, "g1")
	waitText("group 1's page shows the node's own replica", "/console/groups/1", `[data-testid=local-group]`, "none")
	shot("quorum-lost-group")
	waitText("balancer", "/console/balancer", `[data-testid=balancer-mode]`, "no controller leader")
}
