package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type fixed Overview

func (f fixed) Overview() Overview { return Overview(f) }

func TestOverviewShowsLiveLeaderNeverThePreferredOne(t *testing.T) {
	src := fixed{NodeID: 2, ClusterID: "c1", RouteRevision: 3, Ready: "group 2 has no live leader", GeneratedAt: time.Unix(0, 0),
		Groups: []GroupRow{
			{ID: 1, HashSlots: 128, PreferredLeader: 1, Leader: 3, Term: 5, ConfigEpoch: 1},
			{ID: 2, HashSlots: 128, PreferredLeader: 2, Leader: 0, Term: 0, ConfigEpoch: 2},
		}}
	ts := httptest.NewServer(Handler(src))
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/console")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	row := func(id string) string {
		i := strings.Index(page, `data-testid="group-`+id+`"`)
		if i < 0 {
			t.Fatalf("no row for group %s", id)
		}
		j := strings.Index(page[i:], "</tr>")
		return page[i : i+j]
	}
	if r := row("1"); !strings.Contains(r, "node 3") {
		t.Fatalf("group 1 row lacks its live leader: %s", r)
	}
	if r := row("2"); !strings.Contains(r, "no live leader") {
		t.Fatalf("group 2 without a leader must say so: %s", r)
	}
	if !strings.Contains(page, "not ready: group 2 has no live leader") || !strings.Contains(page, "route revision <b>3</b>") {
		t.Fatalf("overview header wrong:\n%s", page)
	}
	css, err := http.Get(ts.URL + "/console/static/console.css")
	if err != nil || css.StatusCode != 200 {
		t.Fatalf("static asset: %v %v", err, css.StatusCode)
	}
	css.Body.Close()
}
