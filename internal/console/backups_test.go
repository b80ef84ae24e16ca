package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/operatortest"
)

// TestBackupsPage: the backups page is the administrators' (a read role is
// refused); a backup started from it is listed running with its progress,
// then done with its size; a second start while one runs comes back as a
// refusal; the fragment refreshes the table alone.
func TestBackupsPage(t *testing.T) {
	f := newFake()
	authn, err := auth.New(map[string]auth.Role{adminTok: auth.RoleAdmin, readTok: auth.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	sess := auth.NewSessions(auth.SessionsConfig{})
	ts := httptest.NewServer(Handler(Config{Source: f, Auth: authn, Sessions: sess}))
	defer ts.Close()
	if resp, _ := get(t, ts, sess, readTok, "/console/backups"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the backups page with the read role: %d, want 403", resp.StatusCode)
	}
	if resp, body := get(t, ts, sess, adminTok, "/console/backups"); resp.StatusCode != 200 || !strings.Contains(body, `data-testid="no-backups"`) {
		t.Fatalf("no backups yet: %d", resp.StatusCode)
	}
	open := auth.NewSessions(auth.SessionsConfig{})
	openAuth, _ := auth.New(nil)
	ots := httptest.NewServer(Handler(Config{Source: f, Auth: openAuth, Sessions: open}))
	defer ots.Close()
	if fl := postFlash(t, ots.URL+"/console/backups", nil); !strings.Contains(fl, "started, into /backups/") {
		t.Fatalf("start: flash %q", fl)
	}
	if fl := postFlash(t, ots.URL+"/console/backups", nil); !strings.Contains(fl, "Starting a backup refused: ") || !strings.Contains(fl, "one at a time") {
		t.Fatalf("a second start: flash %q", fl)
	}
	_, body := get(t, ts, sess, adminTok, "/console/backups")
	doc := parse(t, body)
	if rows := byTestID(doc, "backup-row"); len(rows) != 1 || text(one(t, doc, "backup-state")) != "⟳ running" || !strings.Contains(text(rows[0]), "0 / 2") {
		t.Fatalf("running: %q", text(one(t, doc, "backups")))
	}
	f.Backups().(*operatortest.Backups).Finish(3<<20, "")
	_, frag := get(t, ts, sess, adminTok, "/console/fragments/backups")
	doc = parse(t, frag)
	if row := text(one(t, doc, "backup-row")); !strings.Contains(row, "✔ done") || !strings.Contains(row, "3.0 MiB") || !strings.Contains(row, "2 / 2") ||
		!strings.Contains(row, "100 %") || strings.Contains(frag, "<html") {
		t.Fatalf("done, as the fragment: %q", row)
	}
	if got := f.Count("StartBackup"); got != 2 {
		t.Fatalf("StartBackup asked %d times", got)
	}
	// A lost-quorum recovery through the node: its report is on the page.
	if !strings.Contains(body, `data-testid="no-recoveries"`) {
		t.Fatal("no recoveries yet: not said")
	}
	f.SetGroup(slotstore.GroupView{ID: 3, HashSlots: 64, Voters: []slotstore.NodeID{1, 2, 3}})
	if _, err := f.Recovery().RecoverGroup(context.Background(), 3, true); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, ts, sess, adminTok, "/console/backups")
	doc = parse(t, body)
	if row := text(one(t, doc, "recovery-row")); !strings.Contains(row, "node 1 (replica 9)") || !strings.Contains(row, "nothing known committed") ||
		!strings.Contains(row, "n1/r1, n2/r2, n3/r3") {
		t.Fatalf("the recovery: %q", row)
	}
}
