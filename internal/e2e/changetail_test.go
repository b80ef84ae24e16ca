package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestConsoleChangeTail: on a real 3-node cluster, a business key written
// and a uid subscribed to a channel through the API show on the group's
// page (the tail of its hash slots) and on the channel's page, opened from
// the channel form, as this node applied them — values escaped, the
// channel's page without the key's change. In headless Chromium the
// channel's fragment then follows the node's watch stream (its poll held
// back) and shows a new subscriber without a reload.
func TestConsoleChangeTail(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 1})
	base := serveConsole(t, c.Nodes[0])
	api := &server{t: t, node: c.Nodes[0], url: base}
	admin := []string{"Authorization", "Bearer " + consoleAdminToken}
	api.must(200, "PUT", "/v1/kv/tail-key", `{"value":"<b>hello</b>"}`, admin...)
	time.Sleep(5 * time.Millisecond) // the next changes get a later leader time: across slots the tail orders by it
	api.must(201, "POST", "/v1/channels", `{"channel_id":"room-1","channel_type":2}`, admin...)
	api.must(200, "POST", "/v1/channels/2/room-1/subscribers", `{"uids":["u1"]}`, admin...)

	cookie := signIn(t, base, consoleReadToken)
	fetch := func(path string) (string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.AddCookie(cookie)
		resp, err := http.DefaultClient.Do(req) // follows the form's redirect
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return resp.Request.URL.Path, string(b)
	}
	const keyRow, subRow = "key=tail-key", "channel=2/room-1 uid=u1"
	// Node 1 may be a follower: it shows a change once it applied it.
	testutil.WaitFor(t, 10*time.Second, 100*time.Millisecond, func() (bool, string) {
		_, page := fetch("/console/groups/1")
		return strings.Contains(page, keyRow) && strings.Contains(page, subRow) && strings.Contains(page, `hx-get="/console/fragments/groups/1/changes"`),
			"the group page lacks the changes: " + tailOf(page)
	})
	_, frag := fetch("/console/fragments/groups/1/changes")
	if !strings.Contains(frag, `&#34;Value&#34;:&#34;&lt;b&gt;hello&lt;/b&gt;&#34;`) || strings.Contains(frag, "<b>hello") {
		t.Fatalf("the key's value is not shown escaped: %s", tailOf(frag))
	}
	if strings.Index(frag, subRow) > strings.Index(frag, keyRow) {
		t.Fatalf("the group's tail is not newest first: %s", tailOf(frag))
	}

	path, page := fetch("/console/channels?channel_type=2&channel_id=room-1")
	if path != "/console/channels/2/room-1/changes" || !strings.Contains(page, subRow) || strings.Contains(page, keyRow) ||
		!strings.Contains(page, "<td>channels</td>") || !strings.Contains(page, "<td>subscribers</td>") {
		t.Fatalf("the channel's page (%s): %s", path, tailOf(page))
	}

	if _, err := os.Stat(chromiumPath); err != nil {
		t.Logf("no live check without Chromium at %s: %v", chromiumPath, err)
		return
	}
	ctx, shot, do := browser(t, artifactsDir(t))
	do("sign in", chromedp.Navigate(base+"/console/channels/2/room-1/changes"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), consoleReadToken),
		chromedp.Click(chromedp.CSS(`[data-testid=login-form] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#channel-changes-live [data-testid=changes]`)))
	// The tail follows the node's watch stream (live.js through
	// /console/stream): once its watch is added its 2 s poll is held back,
	// so the new row below can only come from a change the stream reported.
	if state, ok := testutil.Eventually(10*time.Second, 100*time.Millisecond, func() (bool, string) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){ const el = document.querySelector('#channel-changes-live'); return el.dataset.live + ' ' + el.title })()`))
		return err == nil && s == "stream ", fmt.Sprintf("the channel's tail does not follow the stream (err %v): %q", err, s)
	}); !ok {
		shot("channel-tail-stream")
		t.Fatal(state)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.notReloaded = 1; window.held = 0;
		document.body.addEventListener('htmx:beforeRequest', function (e) { if (e.detail.elt.id === 'channel-changes-live' && e.defaultPrevented) window.held++ }); 1`)); err != nil {
		t.Fatal(err)
	}
	if state, ok := testutil.Eventually(10*time.Second, 100*time.Millisecond, func() (bool, string) {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.held`))
		return err == nil && n > 0, fmt.Sprintf("no poll of the followed tail was held back (err %v)", err)
	}); !ok {
		t.Fatal(state)
	}
	api.must(200, "POST", "/v1/channels/2/room-1/subscribers", `{"uids":["u2"]}`, admin...)
	if state, ok := testutil.Eventually(15*time.Second, 250*time.Millisecond, func() (bool, string) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(window.notReloaded || 0) + ' ' + document.querySelector('#channel-changes-live').textContent`))
		return err == nil && strings.HasPrefix(s, "1 ") && strings.Contains(s, "channel=2/room-1 uid=u2"),
			fmt.Sprintf("the channel's fragment did not show u2 in place (err %v): %.300s", err, s)
	}); !ok {
		shot("channel-tail")
		t.Fatal(state)
	}
	shot("channel-tail")
	if s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){ const el = document.querySelector('#channel-changes-live'); return el.dataset.live + ' ' + el.title })()`)); err != nil || s != "stream " {
		t.Fatalf("the tail fell back to polling (err %v): %q", err, s)
	}
	// A group's tail follows a watch of every hash slot's rows.
	do("the group's page", chromedp.Navigate(base+"/console/groups/1"), chromedp.WaitVisible(chromedp.CSS(`#group-changes-live [data-testid=changes]`)))
	if state, ok := testutil.Eventually(10*time.Second, 100*time.Millisecond, func() (bool, string) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){ const el = document.querySelector('#group-changes-live'); return el.dataset.live + ' ' + el.title })()`))
		return err == nil && s == "stream ", fmt.Sprintf("the group's tail does not follow the stream (err %v): %q", err, s)
	}); !ok {
		shot("group-tail-stream")
		t.Fatal(state)
	}
}

// tailOf is the change tail's part of a page, for a failure message.
func tailOf(page string) string {
	if i := strings.Index(page, "changes-live"); i >= 0 {
		page = page[i:]
	}
	return page[:min(len(page), 3000)]
}
