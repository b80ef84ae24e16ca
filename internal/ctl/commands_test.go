package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/httpapi"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// node is the API of a real one-node cluster (four slot groups, real
// dragonboat and Pebble) that the subtests of TestCommands share; each
// writes keys of its own.
type node struct {
	t   *testing.T
	env map[string]string
}

// ok runs a command that must succeed and returns its stdout.
func (n node) ok(args ...string) string {
	n.t.Helper()
	code, stdout, stderr := run(n.env, args...)
	if code != exitOK {
		n.t.Fatalf("%q: exit %d\n%s%s", args, code, stdout, stderr)
	}
	return stdout
}

// json runs a command with -o json that must succeed and decodes its output into v.
func (n node) json(v any, args ...string) {
	n.t.Helper()
	out := n.ok(append(args, "-o", "json")...)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields() // the generated types know every member the server sends
	if err := dec.Decode(v); err != nil {
		n.t.Fatalf("%q: %v\n%s", args, err, out)
	}
}

// fails runs a command that must exit with code; it returns stderr.
func (n node) fails(code int, args ...string) string {
	n.t.Helper()
	got, stdout, stderr := run(n.env, args...)
	if got != code {
		n.t.Fatalf("%q: exit %d, want %d\n%s%s", args, got, code, stdout, stderr)
	}
	return stderr
}

// TestCommands runs every command against a real cluster: the answers
// decode into the generated types and say what was done; the exit codes
// are those of the table.
func TestCommands(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 4})
	ts := slotstoretest.ServeAPI(t, c.Nodes[0], func(cfg *httpapi.Config) { cfg.Audit = audit.New(c.Nodes[0], nil) })
	env := map[string]string{"SLOTMETA_ENDPOINTS": ts.URL}

	t.Run("kv round trip", func(t *testing.T) {
		n := node{t, env}
		var put, got client.KV
		n.json(&put, "kv", "put", "rt/key", "v1") // a / in a key travels as %2F
		if put.Key != "rt/key" || put.Value != "v1" || put.Revision < 1 {
			t.Fatalf("put: %+v", put)
		}
		n.json(&got, "kv", "get", "rt/key")
		if got != put {
			t.Fatalf("get %+v after put %+v", got, put)
		}
		n.json(&got, "kv", "get", "rt/key", "--consistency", "local")
		if got != put {
			t.Fatalf("local get %+v after put %+v", got, put)
		}
		var del map[string]any
		n.json(&del, "kv", "delete", "rt/key")
		if rev, _ := del["revision"].(float64); del["key"] != "rt/key" || del["deleted"] != true || int64(rev) <= put.Revision {
			t.Fatalf("delete: %v (the put was at revision %d)", del, put.Revision)
		}
		n.fails(exitNotFound, "kv", "get", "rt/key")
		n.fails(exitNotFound, "kv", "delete", "rt/key")
	})

	t.Run("compare and set", func(t *testing.T) {
		n := node{t, env}
		var first, second client.KV
		n.json(&first, "kv", "put", "cas", "a", "--if-absent")
		n.json(&second, "kv", "put", "cas", "b", "--if-match", fmt.Sprint(first.Revision))
		// A stale revision: 4, and with -o json the server's error JSON on stderr.
		stderr := n.fails(exitConflict, "kv", "put", "cas", "c", "--if-match", fmt.Sprint(first.Revision), "-o", "json")
		var eb client.ErrorBody
		if err := json.Unmarshal([]byte(stderr), &eb); err != nil || eb.Error.Code != client.ErrorCodeFailedPrecondition {
			t.Fatalf("stale --if-match: %q", stderr)
		}
		n.fails(exitConflict, "kv", "put", "cas", "c", "--if-absent")
		n.fails(exitConflict, "kv", "delete", "cas", "--if-match", fmt.Sprint(first.Revision))
		var got client.KV
		if n.json(&got, "kv", "get", "cas"); got.Value != "b" {
			t.Fatalf("after the refused writes: %+v", got)
		}
	})

	t.Run("missing key", func(t *testing.T) {
		n := node{t, env}
		if stderr := n.fails(exitNotFound, "kv", "get", "no-such-key"); !strings.HasPrefix(stderr, "error: not_found: ") {
			t.Fatalf("stderr %q", stderr)
		}
	})

	t.Run("idempotency key", func(t *testing.T) {
		n := node{t, env}
		var a, b, c client.KV
		n.json(&a, "kv", "put", "idem", "1", "--idempotency-key", "idem-test-1")
		n.json(&b, "kv", "put", "idem", "1", "--idempotency-key", "idem-test-1") // a retry: answered, not applied
		n.json(&c, "kv", "put", "idem", "1")                                     // a new write: a random key of its own
		if b != a || c.Revision <= a.Revision {
			t.Fatalf("first %+v, retried %+v, new %+v", a, b, c)
		}
	})

	t.Run("batch", func(t *testing.T) {
		n := node{t, env}
		var w client.KVBatchWriteResult
		n.json(&w, "kv", "batch-write", "put", "b.a", "1", "put", "b.b", "2", "del", "b.c")
		if len(w.Items) != 3 || !w.Items[0].Ok || !w.Items[1].Ok || !w.Items[2].Ok {
			t.Fatalf("batch write: %+v", w)
		}
		ops := filepath.Join(t.TempDir(), "ops.json")
		lines := `{"op":"put","key":"b.c","value":"3"}` + "\n" + `[{"op":"delete","key":"b.b"}]` + "\n"
		if err := os.WriteFile(ops, []byte(lines), 0o600); err != nil {
			t.Fatal(err)
		}
		n.json(&w, "kv", "batch-write", "--file", ops)
		if len(w.Items) != 2 || !w.Items[0].Ok || w.Items[1].Existed == nil || !*w.Items[1].Existed {
			t.Fatalf("batch write from a file: %+v", w)
		}
		var r client.KVBatchResult
		n.json(&r, "kv", "batch-get", "b.a", "b.b", "b.c")
		if len(r.Items) != 3 || !r.Items[0].Found || *r.Items[0].Value != "1" || r.Items[1].Found || *r.Items[2].Value != "3" {
			t.Fatalf("batch get: %+v", r)
		}
		// A failed condition: the batch is answered, its exit code is the item's.
		if stderr := n.fails(exitConflict, "kv", "batch-write", "--file", writeFile(t, `{"op":"put","key":"b.a","value":"x","if_match":999999}`)); !strings.Contains(stderr, "failed_precondition") {
			t.Fatalf("stderr %q", stderr)
		}
	})

	t.Run("listing and watch", func(t *testing.T) {
		n := node{t, env}
		for i := range 12 {
			n.ok("kv", "put", fmt.Sprintf("ls/%02d", i), fmt.Sprintf("v%d", i))
		}
		n.ok("kv", "put", "lt/0", "not listed")
		var page client.KVPage
		n.json(&page, "kv", "get", "--prefix", "ls/", "--page-size", "5")
		var keys []string
		for _, it := range page.Items {
			keys = append(keys, it.Key)
		}
		slices.Sort(keys)
		if len(keys) != 12 || keys[0] != "ls/00" || keys[11] != "ls/11" || page.NextCursor != nil {
			t.Fatalf("kv get --prefix ls/: %v (next %v)", keys, page.NextCursor)
		}
		var ranged client.KVPage // a fresh one: decoding into page would keep its values
		n.json(&ranged, "kv", "get", "--from", "ls/03", "--to", "ls/05", "--keys-only")
		if len(ranged.Items) != 2 || ranged.Items[0].Value != nil {
			t.Fatalf("kv get --from ls/03 --to ls/05 --keys-only: %+v", ranged.Items)
		}
		var limited client.KVPage
		n.json(&limited, "kv", "get", "--prefix", "ls/", "--limit", "7", "--page-size", "3")
		if len(limited.Items) != 7 || limited.NextCursor == nil {
			t.Fatalf("kv get --prefix ls/ --limit 7: %d keys, next %v", len(limited.Items), limited.NextCursor)
		}
		if table := n.ok("kv", "get", "--prefix", "ls/1"); !strings.Contains(table, "ls/10") || !strings.Contains(table, "v11") || strings.Contains(table, "ls/09") {
			t.Fatalf("the table of kv get --prefix ls/1:\n%s", table)
		}
		n.fails(exitUsage, "kv", "get", "ls/00", "--prefix", "ls/")
		n.fails(exitUsage, "kv", "get")
		n.fails(exitUsage, "kv", "get", "--from", "b", "--to", "a")
		// kv watch --prefix: each change a line, until interrupted (no
		// --timeout: a watch has no deadline of its own).
		var out syncBuffer
		done := make(chan int, 1)
		wctx, stop := context.WithCancel(context.Background()) // an interrupt
		defer stop()
		go func() {
			var errOut bytes.Buffer
			done <- Run(wctx, []string{"kv", "watch", "--prefix", "wt/"}, func(k string) string { return env[k] }, &out, &errOut)
		}()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; !strings.Contains(out.String(), "put\twt/") && i < 40; i++ {
			n.ok("kv", "put", fmt.Sprintf("wt/%d", i), "w")
			n.ok("kv", "put", fmt.Sprintf("wx/%d", i), "not watched")
			<-tick.C
		}
		n.ok("kv", "delete", "wt/0")
		for i := 0; !strings.Contains(out.String(), "delete\twt/0") && i < 50; i++ {
			<-tick.C
		}
		stop()
		if code := <-done; code != exitOK {
			t.Fatalf("kv watch ended %d:\n%s", code, out.String())
		}
		got := out.String()
		if !strings.Contains(got, "put\twt/") || !strings.Contains(got, "\tw\t") || !strings.Contains(got, "delete\twt/0") || strings.Contains(got, "wx/") {
			t.Fatalf("kv watch --prefix wt/ printed:\n%s", got)
		}
	})

	t.Run("user channel subscriber", func(t *testing.T) {
		n := node{t, env}
		var u client.User
		n.json(&u, "user", "put", "ada", "--name", "Ada", "--avatar", "https://x/a.png", "--extra", `{"team":7}`)
		if u.Uid != "ada" || u.Name != "Ada" || u.Avatar != "https://x/a.png" || u.Extra == nil || u.Revision < 1 {
			t.Fatalf("user put: %+v", u)
		}
		var got client.User
		if n.json(&got, "user", "get", "ada"); got.Name != "Ada" || got.CreatedAtMs != u.CreatedAtMs {
			t.Fatalf("user get: %+v", got)
		}
		var ch client.Channel
		n.json(&ch, "channel", "put", "2", "room1", "--large", "--send-ban")
		if ch.ChannelType != 2 || ch.ChannelId != "room1" || !ch.Large || !ch.SendBan || ch.Ban {
			t.Fatalf("channel put: %+v", ch)
		}
		var added client.ChannelMembersAdded
		if n.json(&added, "subscriber", "add", "2", "room1", "ada", "bob", "cy"); added.Added != 3 || added.Count != 3 {
			t.Fatalf("subscriber add: %+v", added)
		}
		var removed client.ChannelMembersRemoved
		if n.json(&removed, "subscriber", "remove", "2", "room1", "bob"); removed.Removed != 1 || removed.Count != 2 {
			t.Fatalf("subscriber remove: %+v", removed)
		}
		var page client.ChannelMemberPage
		n.json(&page, "subscriber", "list", "2", "room1", "--page-size", "1") // two pages, one answer
		if len(page.Items) != 2 || page.Items[0].Uid != "ada" || page.Items[1].Uid != "cy" || page.NextCursor != nil {
			t.Fatalf("subscriber list: %+v", page)
		}
		if n.json(&ch, "channel", "get", "2", "room1"); ch.SubscriberCount != 2 {
			t.Fatalf("channel get: %+v", ch)
		}
		n.ok("channel", "delete", "2", "room1")
		n.fails(exitNotFound, "channel", "get", "2", "room1")
		n.fails(exitNotFound, "subscriber", "list", "2", "room1")
		n.ok("user", "delete", "ada")
		n.fails(exitNotFound, "user", "get", "ada")
	})

	t.Run("cluster views", func(t *testing.T) {
		n := node{t, env}
		var s client.ClusterSummary
		if n.json(&s, "cluster", "status"); !s.Ready || s.Nodes != 1 || s.Groups != 4 {
			t.Fatalf("cluster status: %+v", s)
		}
		var groups client.GroupList
		if n.json(&groups, "group", "list"); len(groups.Items) != 4 {
			t.Fatalf("group list: %+v", groups)
		}
		var g client.GroupView
		if n.json(&g, "group", "get", fmt.Sprint(groups.Items[0].Id)); g.Id != groups.Items[0].Id || g.HashSlots != 64 {
			t.Fatalf("group get: %+v", g)
		}
		var routes client.Routes
		if n.json(&routes, "route", "list"); len(routes.HashSlots) != 256 {
			t.Fatalf("route list: %d slots", len(routes.HashSlots))
		}
		var resolved client.ResolvedRoutes
		if n.json(&resolved, "route", "resolve", "a", "b"); len(resolved.Routes) != 2 || !resolved.Routes[0].Ready {
			t.Fatalf("route resolve: %+v", resolved)
		}
		var nodes client.NodeList
		if n.json(&nodes, "node", "list"); len(nodes.Items) != 1 || nodes.Items[0].Id != 1 {
			t.Fatalf("node list: %+v", nodes)
		}
		var tasks client.TaskList
		n.json(&tasks, "task", "list")
		// Admin actions the cluster refuses: the exit codes, and the audit trail.
		n.fails(exitConflict, "node", "drain", "1") // the last node: 412
		n.fails(exitNotFound, "node", "drain-status", "1")
		if stderr := n.fails(exitConflict, "leader", "transfer", "1", "1"); !strings.Contains(stderr, "already_leader") {
			t.Fatalf("leader transfer: %q", stderr) // the blockers are on the error line
		}
		n.fails(exitConflict, "replica", "move", "1", "--from", "1", "--to", "9")
		n.fails(exitNotFound, "task", "get", "999")
		n.fails(exitNotFound, "task", "cancel", "999")
		var trail client.AuditList
		_, ok := testutil.Eventually(10*time.Second, 50*time.Millisecond, func() (bool, string) {
			n.json(&trail, "audit", "--limit", "10")
			return len(trail.Items) >= 4, fmt.Sprint(trail)
		})
		if !ok || trail.Items[len(trail.Items)-1].Action != "POST /v1/cluster/nodes/{id}/drain" {
			t.Fatalf("audit: %+v", trail)
		}
	})

	t.Run("backup", func(t *testing.T) {
		n := node{t, map[string]string{"SLOTMETA_ENDPOINTS": ts.URL}}
		var b client.Backup
		if n.json(&b, "backup", "start", "--wait"); b.State != client.BackupStateDone || b.Percent != 100 || b.Bytes == 0 {
			t.Fatalf("backup start --wait: %+v", b)
		}
		var got client.Backup
		if n.json(&got, "backup", "get", b.Id); got.Id != b.Id || got.State != client.BackupStateDone {
			t.Fatalf("backup get: %+v", got)
		}
		var list client.BackupList
		if n.json(&list, "backup", "list"); len(list.Items) == 0 || list.Items[0].Id != b.Id {
			t.Fatalf("backup list: %+v", list)
		}
		if out := n.ok("backup", "list", "-o", "table"); !strings.Contains(out, b.Id) || !strings.Contains(out, "done") {
			t.Fatalf("backup list as a table: %q", out)
		}
		n.fails(exitNotFound, "backup", "get", "20000101T000000Z-000000")
	})
	t.Run("group recover", func(t *testing.T) {
		n := node{t, env}
		n.fails(exitUsage, "group", "recover", "1")                           // the confirmation is required
		n.fails(exitConflict, "group", "recover", "1", "--accept-data-loss")  // its quorum stands: failed_precondition
		n.fails(exitNotFound, "group", "recover", "99", "--accept-data-loss") // no such group
	})
	t.Run("operator verbs", func(t *testing.T) {
		n := node{t, env}
		var b client.BalancerStatus
		if n.json(&b, "balancer", "pause"); !b.Paused {
			t.Fatalf("balancer pause: %+v", b)
		}
		if n.json(&b, "balancer", "status"); !b.Paused {
			t.Fatalf("balancer status after a pause: %+v", b)
		}
		if n.json(&b, "balancer", "resume"); b.Paused {
			t.Fatalf("balancer resume: %+v", b)
		}
		if out := n.ok("balancer", "status", "-o", "table"); !strings.Contains(out, "PAUSED") {
			t.Fatalf("balancer status as a table: %q", out)
		}
		var plan client.BalancePlan
		n.json(&plan, "balancer", "plan")
		n.json(&b, "balancer", "release", "1")
		n.fails(exitUsage, "balancer", "release", "x")
		var g client.GroupView
		if n.json(&g, "leader", "prefer", "1", "1"); g.Id != 1 || g.PreferredLeader != 1 {
			t.Fatalf("leader prefer: %+v", g)
		}
		n.fails(exitConflict, "leader", "prefer", "1", "9") // not a peer of the group
		n.fails(exitConflict, "leader", "transfer", "1", "1", "--prefer")
		// A group the cluster would create is not created here (the
		// subtests share the node): one on a node that is not there is
		// refused, which shows the request made and answered.
		n.fails(exitFailure, "group", "create", "--peers", "9") // invalid_argument: no such active node
		n.fails(exitUsage, "group", "create", "--peers", "0")
		n.fails(exitUsage, "group", "split", "1", "--slots", "300")
		n.fails(exitUsage, "group", "merge", "1")
		n.fails(exitNotFound, "group", "merge", "99", "--into", "1")
		n.fails(exitNotFound, "group", "retire", "99")
		n.fails(exitConflict, "node", "remove", "1") // not drained: refused
	})
	t.Run("endpoints", func(t *testing.T) {
		n := node{t, env}
		var st struct{ Endpoints []endpointAnswer }
		if n.json(&st, "endpoint", "status"); len(st.Endpoints) != 1 || !st.Endpoints[0].Healthy || st.Endpoints[0].Status == nil ||
			st.Endpoints[0].Status.NodeId != 1 || len(st.Endpoints[0].Status.Local) != 5 { // the controller and 4 groups
			t.Fatalf("endpoint status: %+v", st)
		}
		// The node's release line and its copy of the controller (digest
		// at an index) are in the table, for an upgrade's checks.
		if s := st.Endpoints[0].Status; deref(s.Version) != "0.2" || len(deref(s.ControllerDigest)) != 16 || deref(s.ControllerApplied) == 0 {
			t.Fatalf("endpoint status: version %v, controller %v at %v", deref(s.Version), deref(s.ControllerDigest), deref(s.ControllerApplied))
		}
		// (Another digest, maybe: the controller may have applied more since.)
		if out := n.ok("endpoint", "status", "-o", "table"); !strings.Contains(out, "CONTROLLER_DIGEST") || !regexp.MustCompile(`\s0\.2\s+0\.[12]\s+\d+\s+[0-9a-f]{16}\s`).MatchString(out) {
			t.Fatalf("endpoint status's table: %q", out)
		}
		if out := n.ok("endpoint", "health", "-o", "table"); !strings.Contains(out, "true") {
			t.Fatalf("endpoint health: %q", out)
		}
		// An endpoint that does not answer: its row says why, the exit is 5.
		dead := "http://" + testutil.FreeAddr(t)
		code, stdout, stderr := run(map[string]string{"SLOTMETA_ENDPOINTS": ts.URL + "," + dead}, "endpoint", "health", "-o", "json")
		var hs struct{ Endpoints []endpointAnswer }
		if err := json.Unmarshal([]byte(stdout), &hs); err != nil || code != exitUnavailable || len(hs.Endpoints) != 2 ||
			!hs.Endpoints[0].Healthy || hs.Endpoints[1].Healthy || hs.Endpoints[1].Error == "" {
			t.Fatalf("endpoint health with a dead endpoint: exit %d %v %+v\n%s", code, err, hs, stderr)
		}
	})
	t.Run("group check", func(t *testing.T) {
		n := node{t, env}
		var got client.GroupCheck
		if n.json(&got, "group", "check", "1"); got.Verdict != client.GroupCheckVerdictConsistent || got.Replicas == nil || len(*got.Replicas) != 1 {
			t.Fatalf("group check: %+v", got)
		}
		if out := n.ok("group", "check", "1", "-o", "table"); !strings.Contains(out, "group 1 at index") || !strings.Contains(out, "consistent") {
			t.Fatalf("group check as a table: %q", out)
		}
		n.fails(exitNotFound, "group", "check", "99")
	})

	t.Run("endpoints fail over", func(t *testing.T) {
		dead := "http://" + testutil.FreeAddr(t)
		n := node{t, map[string]string{"SLOTMETA_ENDPOINTS": dead + "," + ts.URL}}
		var kv client.KV
		if n.json(&kv, "kv", "put", "fail/over", "x"); kv.Value != "x" || kv.Key != "fail/over" { // the rebased URL keeps %2F
			t.Fatalf("put through the second endpoint: %+v", kv)
		}
		n.ok("cluster", "status", "--endpoints", dead+","+ts.URL) // the flag wins over the env
		n.fails(exitFailure, "cluster", "status", "--endpoints", dead)
	})

	t.Run("https", func(t *testing.T) {
		// The same API over HTTPS: --cacert (or SLOTMETA_CACERT) verifies it.
		tlsTS := httptest.NewTLSServer(ts.Config.Handler)
		t.Cleanup(tlsTS.Close)
		ca := writeFile(t, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsTS.Certificate().Raw})))
		n := node{t, map[string]string{"SLOTMETA_ENDPOINTS": tlsTS.URL}}
		var kv client.KV
		if n.json(&kv, "kv", "put", "over-tls", "x", "--cacert", ca); kv.Value != "x" {
			t.Fatalf("put over HTTPS: %+v", kv)
		}
		n.fails(exitFailure, "kv", "get", "over-tls") // the system's roots do not know the test CA
		n.env["SLOTMETA_CACERT"] = ca
		n.ok("kv", "get", "over-tls")
	})

	t.Run("table output", func(t *testing.T) {
		n := node{t, env}
		n.ok("kv", "batch-write", "put", "t.1", "one", "put", "t.2", "two words", "put", "t.3", "line\nbreak")
		lines := strings.Split(strings.TrimSuffix(n.ok("kv", "batch-get", "t.1", "t.2", "t.3"), "\n"), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[0], "KEY ") || !strings.Contains(lines[0], "VALUE") ||
			!strings.HasPrefix(lines[2], "t.2 ") || !strings.Contains(lines[2], "two words") || !strings.Contains(lines[3], `"line\nbreak"`) {
			t.Fatalf("batch-get table:\n%s", strings.Join(lines, "\n"))
		}
		// Aligned: every row's VALUE starts in the header's column.
		col := strings.Index(lines[0], "VALUE")
		for _, l := range lines[1:] {
			if l[col-1] != ' ' || l[col] == ' ' {
				t.Fatalf("not aligned at %d:\n%s", col, strings.Join(lines, "\n"))
			}
		}
		if got := strings.Count(n.ok("route", "list"), "\n"); got != 257 {
			t.Fatalf("route list: %d lines, want a header and 256 rows", got)
		}
		if out := n.ok("node", "list"); !strings.HasPrefix(out, "ID ") || strings.Count(out, "\n") != 2 {
			t.Fatalf("node list:\n%s", out)
		}
	})
}

func writeFile(t *testing.T, content string) string {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTokens: against an API that requires tokens, no token or a wrong one
// exits 6, as does a read token that writes; the right one works, from
// --token or SLOTMETA_TOKEN.
func TestTokens(t *testing.T) {
	const writer, reader = "ctl-test-write-token", "ctl-test-read-token"
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 1})
	authn, err := auth.New(map[string]auth.Role{writer: auth.RoleWrite, reader: auth.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	ts := slotstoretest.ServeAPI(t, c.Nodes[0], func(cfg *httpapi.Config) { cfg.Auth = authn })
	n := node{t, map[string]string{"SLOTMETA_ENDPOINTS": ts.URL}}
	if stderr := n.fails(exitUnauthorized, "kv", "put", "k", "v"); !strings.HasPrefix(stderr, "error: unauthenticated: ") {
		t.Fatalf("no token: %q", stderr)
	}
	n.fails(exitUnauthorized, "kv", "get", "k", "--token", "not-a-token")
	n.ok("kv", "put", "k", "v", "--token", writer)
	if stderr := n.fails(exitUnauthorized, "kv", "put", "k", "v", "--token", reader); !strings.Contains(stderr, "permission_denied") {
		t.Fatalf("read token writes: %q", stderr)
	}
	n.env["SLOTMETA_TOKEN"] = reader
	var kv client.KV
	if n.json(&kv, "kv", "get", "k"); kv.Value != "v" {
		t.Fatalf("get with SLOTMETA_TOKEN: %+v", kv)
	}
	n.ok("kv", "put", "k", "w", "--token", writer) // the flag wins over the env
}

// TestEndpointsOfTheCluster: --cluster asks every registered node at the
// API address it registered, not the endpoints given.
func TestEndpointsOfTheCluster(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 2, Groups: 1, ReplicationFactor: 2})
	var urls []string
	for i, n := range c.Nodes {
		urls = append(urls, slotstoretest.ServeAPIAt(t, n, c.APIAddr(i)).URL)
	}
	env := map[string]string{"SLOTMETA_ENDPOINTS": urls[0]}
	// Both nodes ready (a group may still be electing its leader at
	// first, and each node says so until then: exit 5).
	var st struct{ Endpoints []endpointAnswer }
	var code int
	var stdout, stderr string
	testutil.Eventually(20*time.Second, 50*time.Millisecond, func() (bool, string) {
		code, stdout, stderr = run(env, "endpoint", "status", "--cluster", "-o", "json")
		return code == exitOK, stdout
	})
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != exitOK {
		t.Fatalf("endpoint status --cluster: exit %d %v\n%s%s", code, err, stdout, stderr)
	}
	if len(st.Endpoints) != 2 || st.Endpoints[1].Endpoint != urls[1] || st.Endpoints[1].Status == nil || st.Endpoints[1].Status.NodeId != 2 {
		t.Fatalf("endpoint status --cluster: %+v", st)
	}
	for _, e := range st.Endpoints {
		if !e.Healthy || len(e.Status.Local) != 2 { // the controller and group 1 on each node
			t.Fatalf("endpoint status --cluster: %+v", e)
		}
		// Each hears the other over Raft, by its own transport.
		if e.Status.Peers == nil || len(*e.Status.Peers) != 1 || (*e.Status.Peers)[0].Node == e.Status.NodeId ||
			(*e.Status.Peers)[0].HeardAgoMs < 0 || (*e.Status.Peers)[0].HeardAgoMs > 5000 {
			t.Fatalf("node %d's peers: %+v", e.Status.NodeId, e.Status.Peers)
		}
	}
	// Node 2 stops: node 1 says so by itself — it has not heard from it
	// since, and its connection to it failed.
	c.StopNode(1)
	testutil.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		code, stdout, stderr = run(env, "endpoint", "status", "-o", "json")
		st.Endpoints = nil
		if json.Unmarshal([]byte(stdout), &st) != nil || len(st.Endpoints) != 1 || st.Endpoints[0].Status == nil || st.Endpoints[0].Status.Peers == nil {
			return false, stdout + stderr
		}
		p := (*st.Endpoints[0].Status.Peers)[0]
		return p.Node == 2 && p.HeardAgoMs > 1000 && p.Connected != nil && !*p.Connected, fmt.Sprintf("%+v", p)
	})
	if _, table, _ := run(env, "endpoint", "status"); !strings.Contains(table, "HEARS") || !strings.Contains(table, "/1 ") {
		t.Fatalf("the table's HEARS:\n%s", table)
	}
}

// syncBuffer is a bytes.Buffer written by one goroutine and read by another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
