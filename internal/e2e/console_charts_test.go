package e2e

import (
	"fmt"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// apiDo sends an API request with the admin token and returns its status.
func apiDo(t *testing.T, base, method, path, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+consoleAdminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestConsoleChartsInBrowser is the charts and heat-map part of "Must show
// 1" of issue 30: after a short load through node 1's API — hash slot 200
// written hot, a few misses — the charts page draws every node's lines
// with data (writes, latency, errors by status), and the heat map names
// slot 200 the hottest and paints its row darkest.
func TestConsoleChartsInBrowser(t *testing.T) {
	regs := map[slotstore.NodeID]*prometheus.Registry{}
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.HistoryStep = 300 * time.Millisecond
		reg := prometheus.NewRegistry()
		regs[cfg.NodeID], cfg.Registerer = reg, reg
	}})
	base := serveConsoleOn(t, c.Nodes[0], regs[1])
	waitObservedLeaders(t, base)
	const hot = slotstore.HashSlot(200)
	for i, k := range keysInSlot("hot", hot, 200) {
		if code := apiDo(t, base, "PUT", "/v1/kv/"+k, fmt.Sprintf(`{"value":"v%d"}`, i)); code != 200 {
			t.Fatalf("PUT %s: %d", k, code)
		}
	}
	for i := range 20 {
		if code := apiDo(t, base, "PUT", fmt.Sprintf("/v1/kv/cold-%d", i), `{"value":"c"}`); code != 200 {
			t.Fatalf("PUT cold-%d: %d", i, code)
		}
		if code := apiDo(t, base, "GET", fmt.Sprintf("/v1/kv/missing-%d", i), ""); code != 404 {
			t.Fatalf("GET missing-%d: %d", i, code)
		}
	}

	ctx, shot, do := browser(t, artifactsDir(t))
	do("sign in", chromedp.Navigate(base+"/console/charts"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), consoleReadToken),
		chromedp.Click(chromedp.CSS(`[data-testid=login-form] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=chart-nodes]`)))
	for _, n := range []string{"1", "2", "3"} {
		waitOnPage(t, ctx, shot, base, "node "+n+"'s history", "/console/charts", `[data-testid=chart-node-`+n+`]`, "ago")
	}
	// A point above the chart's baseline (y 130) is a value above 0: node
	// 1's writes, latency and 404s have data.
	for _, chart := range []string{"writes", "p99", "errors", "goroutines"} {
		if state, ok := testutil.Eventually(10*time.Second, 300*time.Millisecond, func() (bool, string) {
			above, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('[data-testid=chart-`+chart+`] polyline')]
				.flatMap(p => p.getAttribute('points').split(' ')).filter(xy => parseFloat(xy.split(',')[1]) < 130).length`))
			return err == nil && above > 0, fmt.Sprintf("chart %s: %d points above 0 (err %v)", chart, above, err)
		}); !ok {
			shot("charts-" + chart)
			t.Fatal(state)
		}
	}
	if got, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=chart-errors]`))); !strings.Contains(got, "404") {
		shot("charts-errors")
		t.Fatalf("the errors chart has no 404 line: %q", got)
	}
	shot("charts")

	waitOnPage(t, ctx, shot, base, "hottest slot", "/console/heat", `[data-testid=hot-slots] tbody tr:first-child`, "200")
	do("heat map", chromedp.WaitVisible(chromedp.CSS(`[data-testid=heat-map]`)))
	shot("heat-map")
	// The picture: slot 200's row holds the darkest cell of the map.
	req, _ := http.NewRequest("GET", base+"/console/heat.png", nil)
	req.AddCookie(signIn(t, base, consoleReadToken))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("heat.png: %v", err)
	}
	darkest, darkestRow := 1<<20, -1
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if sum := int(r>>8 + g>>8 + b>>8); sum < darkest {
				darkest, darkestRow = sum, y
			}
		}
	}
	if row := darkestRow / 2; row != int(hot) {
		t.Fatalf("the darkest cell is in slot %d's row, want %d", row, hot)
	}
}

// TestConsoleOutageInBrowser is the rest of "Must show 1" of issue 30:
// with two of five nodes down, group 2 (on nodes 2–4) has no leader and
// the groups page says so; a slot migration into it runs (and waits) on
// the tasks page; a transfer of group 1 to a stopped node is blocked on
// group 1's page, with its blockers.
func TestConsoleOutageInBrowser(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 5, Groups: 2, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.TaskPhaseTimeout = 2 * time.Minute // the task stays running
	}})
	base := serveConsole(t, c.Nodes[0])
	waitObservedLeaders(t, base)
	c.StopNode(2)
	c.StopNode(3)
	testutil.WaitUntil(t, 10*time.Second, 20*time.Millisecond, "a controller leader among the running nodes", func() bool {
		l := c.Nodes[0].ControllerLeader()
		return l != 0 && l != 3 && l != 4
	})
	ctx, shot, do := browser(t, artifactsDir(t))
	do("sign in", chromedp.Navigate(base+"/console/groups"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), consoleAdminToken),
		chromedp.Click(chromedp.CSS(`[data-testid=login-form] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=groups]`)))
	waitOnPage(t, ctx, shot, base, "group 2 leaderless", "/console/groups", `[data-testid=group-2]`, "no live leader")
	shot("leaderless-group")

	var code int
	testutil.WaitUntil(t, 10*time.Second, 100*time.Millisecond, "the slot migration accepted", func() bool {
		code = apiDo(t, base, "POST", "/v1/cluster/hash-slots/7/migrations", `{"to_group":2}`)
		return code == 202
	})
	tasks := c.Nodes[0].Operator().Tasks()
	if len(tasks) == 0 || tasks[0].Status != "running" {
		t.Fatalf("tasks after the migration: %+v", tasks)
	}
	id := fmt.Sprint(tasks[0].ID)
	waitOnPage(t, ctx, shot, base, "running task", "/console/tasks", `[data-testid=task-`+id+`] [data-testid=task-status]`, "running")
	shot("running-task")

	waitOnPage(t, ctx, shot, base, "blocked preflight", "/console/groups/1", `[data-testid=preflight-3] [data-testid=verdict]`, "blocked")
	if got, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=preflight-3] [data-testid=blockers]`))); got == "" {
		shot("blocked-preflight")
		t.Fatal("a blocked transfer lists no blocker")
	}
	shot("blocked-preflight")
}
