package console

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestDecisionLogPages: the decision log shows its newest 100 rows and a
// link to the older ones, which list below the last row shown, back to a
// link to the newest.
func TestDecisionLogPages(t *testing.T) {
	f := newFake()
	for i := range 150 {
		f.Decide(slotstore.Decision{AtMs: now.UnixMilli() + int64(i), Group: slotstore.GroupID(1 + i%2), Kind: slotstore.DecisionSkip, Reason: "stale_intent"})
	}
	ts := httptest.NewServer(Handler(Config{Source: f}))
	defer ts.Close()
	_, body := fetch(t, ts.URL+"/console/decisions")
	doc := parse(t, body)
	rows := one(t, doc, "decisions").LastChild.FirstChild
	n := 0
	for r := rows; r != nil; r = r.NextSibling {
		n++
	}
	older := one(t, doc, "older-decisions")
	if n != 100 || attr(older, "href") != "/console/decisions?before=51" || len(byTestID(doc, "newest-decisions")) != 0 {
		t.Fatalf("first page: %d rows, older %q", n, attr(older, "href"))
	}
	_, body = fetch(t, ts.URL+attr(older, "href"))
	doc = parse(t, body)
	n = 0
	for r := one(t, doc, "decisions").LastChild.FirstChild; r != nil; r = r.NextSibling {
		n++
	}
	if n != 50 || len(byTestID(doc, "older-decisions")) != 0 || len(byTestID(doc, "newest-decisions")) != 1 {
		t.Fatalf("second page: %d rows", n)
	}
	if !strings.Contains(body, `hx-get="/console/fragments/decisions?before=51"`) {
		t.Fatal("the older page's live part does not stay on it")
	}
}
