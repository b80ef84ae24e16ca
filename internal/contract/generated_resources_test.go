package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestGeneratedClientResources drives every resource group that
// TestGeneratedClient does not (users and business keys) end to end through
// the Go client generated from the spec, against a real node: each subtest
// writes through the typed request types, reads the typed answers back and
// checks that the values round-trip. The client's transport checks every
// exchange against the spec as well.
func TestGeneratedClientResources(t *testing.T) {
	n := startNode(t)
	c := newGenClient(t, n)

	t.Run("devices", func(t *testing.T) { genDevices(t, c) })
	t.Run("system-uids", func(t *testing.T) { genSystemUIDs(t, c) })
	t.Run("plugin-bindings", func(t *testing.T) { genPluginBindings(t, c) })
	t.Run("channels", func(t *testing.T) { genChannels(t, c) })
	t.Run("channel-lists", func(t *testing.T) { genChannelLists(t, c) })
	t.Run("memberships", func(t *testing.T) { genMemberships(t, c) })
	t.Run("cmd-bindings", func(t *testing.T) { genCmdBindings(t, c) })
	t.Run("channel-runtime", func(t *testing.T) { genChannelRuntime(t, c) })
	t.Run("batch-reads", func(t *testing.T) { genBatchReads(t, c) })
	t.Run("channel-migrations", func(t *testing.T) { genChannelMigrations(t, c) })
	t.Run("message-events", func(t *testing.T) { genMessageEvents(t, c) })
	t.Run("watch", func(t *testing.T) { genWatch(t, c) })
	t.Run("watch-stream", func(t *testing.T) { genWatchStream(t, c) })

	// Every operation of these groups went through the generated client: a
	// new one needs its step here. (TestGeneratedClient has users and kv (its listing, the batch read of kv),
	// TestGeneratedClientCluster /v1/cluster.)
	genRequireExercised(t, n, func(op string) bool {
		path := op[strings.Index(op, " ")+1:]
		return strings.HasPrefix(path, "/v1/") && !strings.HasPrefix(path, "/v1/cluster") && !strings.HasPrefix(path, "/v1/kv") && path != "/v1/batch/kv/get" && path != "/v1/batch/kv/write" &&
			path != "/v1/users" && path != "/v1/users/{uid}"
	})
}

// TestGeneratedClientCluster drives the cluster API (summary, nodes, routes,
// resolve, groups, leader transfer, preferred leader, replica moves,
// hash-slot migrations, tasks, decisions) through the generated client, on a
// node with hash-slot migration enabled whose background loops the test
// drives itself, so that every answer is deterministic.
func TestGeneratedClientCluster(t *testing.T) {
	n, cn := startGenNode(t, func(cfg *cluster.Config) {
		cfg.ObserveInterval = -1 // the test observes and steps tasks itself
	})
	genCluster(t, newGenClient(t, n), cn)
	genRequireExercised(t, n, func(op string) bool { return strings.Contains(op, " /v1/cluster") })
}

// --- helpers ---------------------------------------------------------------

// genRequireExercised fails t unless every operation of the spec that
// ours selects was reached on n (through its checking transport).
func genRequireExercised(t *testing.T, n *node, ours func(op string) bool) {
	t.Helper()
	var missed []string
	for _, op := range unexercised(n.spec, n.tr.seen()) {
		if ours(op) {
			missed = append(missed, op)
		}
	}
	if len(missed) > 0 {
		t.Errorf("operations no generated-client step reaches: %v", missed)
	}
}

// genResp is what every generated *XxxResponse has.
type genResp interface {
	StatusCode() int
	GetBody() []byte
}

// genCheck fails t unless the call succeeded with status want.
func genCheck(t testing.TB, what string, r genResp, err error, want int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got := r.StatusCode(); got != want {
		t.Fatalf("%s: %d %.300s, want %d", what, got, r.GetBody(), want)
	}
}

// genCheckErr checks an error answer's body and its code.
func genCheckErr(t testing.TB, what string, body *client.ErrorBody, code client.ErrorCode) {
	t.Helper()
	if body == nil {
		t.Fatalf("%s: no typed error body", what)
	}
	if body.Error.Code != code {
		t.Fatalf("%s: error %+v, want code %s", what, body.Error, code)
	}
}

func newGenClient(t *testing.T, n *node) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(n.url, client.WithHTTPClient(n.client))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startGenNode is startNode on a node whose configuration tune adjusts; it
// returns the cluster node too, for the test to drive its loops.
func startGenNode(t *testing.T, tune func(*cluster.Config)) (*node, *cluster.Node) {
	t.Helper()
	s, _ := contractSpec(t)
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 4, Tune: tune})
	n := &node{t: t, spec: s, backend: c.Nodes[0]}
	n.handler, n.url = n.serve(apiConfig(n.backend))
	n.tr = &validatingTransport{t: t, spec: s}
	n.client = &http.Client{Transport: n.tr, Timeout: 20 * time.Second}
	return n, c.Nodes[0]
}

func genCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// genHashSlot is the spec's hash slot of a route key: CRC32-IEEE(key) % 256.
func genHashSlot(key string) int { return int(crc32.ChecksumIEEE([]byte(key)) % 256) }

// genJSON marshals v (an any-typed Extra, config or payload) for comparing.
func genJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// genAny returns the JSON value s as the generated clients' any-typed
// members hold it.
func genAny(t testing.TB, s string) *any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

// genWalk collects a paged listing: fetch answers one page for a cursor (nil
// for the first) with its next cursor.
func genWalk[I any](t *testing.T, what string, fetch func(cursor *string) ([]I, *string)) []I {
	t.Helper()
	var all []I
	var cursor *string
	for pages := 0; ; pages++ {
		if pages > 300 {
			t.Fatalf("%s: listing does not end", what)
		}
		items, next := fetch(cursor)
		all = append(all, items...)
		if next == nil || *next == "" {
			return all
		}
		cursor = next
	}
}

func genCreateUser(t *testing.T, ctx context.Context, c *client.ClientWithResponses, uid string) client.User {
	t.Helper()
	r, err := c.CreateUserWithResponse(ctx, nil, client.UserCreate{Uid: uid})
	genCheck(t, "create user "+uid, r, err, http.StatusCreated)
	return *r.JSON201
}

// --- devices ---------------------------------------------------------------

func genDevices(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	const uid = "dev-ada"
	genCreateUser(t, ctx, c, uid)

	put, err := c.PutDeviceWithResponse(ctx, uid, 1, &client.PutDeviceParams{IdempotencyKey: ptr("dev-ada-1")},
		client.DeviceUpsert{Token: "tok-1", DeviceLevel: ptr(1)})
	genCheck(t, "put device 1", put, err, http.StatusOK)
	d1 := put.JSON200
	if d1 == nil || d1.Uid != uid || d1.DeviceFlag != 1 || d1.Token != "tok-1" || d1.DeviceLevel != 1 || d1.CreatedAtMs == 0 || d1.Revision == 0 {
		t.Fatalf("put device 1: %+v", d1)
	}
	if h := put.Headers200; h == nil || h.XHashSlot == nil || *h.XHashSlot != genHashSlot(uid) || h.XSlotGroup == nil || h.XRouteRevision == nil {
		t.Fatalf("put device 1 headers: %+v", put.Headers200)
	}
	replay, err := c.PutDeviceWithResponse(ctx, uid, 1, &client.PutDeviceParams{IdempotencyKey: ptr("dev-ada-1")},
		client.DeviceUpsert{Token: "tok-1", DeviceLevel: ptr(1)})
	genCheck(t, "replayed put device 1", replay, err, http.StatusOK)
	if h := replay.Headers200; h == nil || h.IdempotentReplayed == nil || *h.IdempotentReplayed != "true" || *replay.JSON200 != *d1 {
		t.Fatalf("replayed put device: %+v %+v", replay.Headers200, replay.JSON200)
	}

	put0, err := c.PutDeviceWithResponse(ctx, uid, 0, nil, client.DeviceUpsert{Token: "tok-0"})
	genCheck(t, "put device 0", put0, err, http.StatusOK)
	if d := put0.JSON200; d.DeviceFlag != 0 || d.Token != "tok-0" || d.DeviceLevel != 0 {
		t.Fatalf("put device 0: %+v", d)
	}

	// Replacing keeps created_at_ms and raises the revision.
	rep, err := c.PutDeviceWithResponse(ctx, uid, 1, nil, client.DeviceUpsert{Token: "tok-1b", DeviceLevel: ptr(0)})
	genCheck(t, "replace device 1", rep, err, http.StatusOK)
	if d := rep.JSON200; d.Token != "tok-1b" || d.DeviceLevel != 0 || d.CreatedAtMs != d1.CreatedAtMs || d.Revision <= d1.Revision {
		t.Fatalf("replaced device 1: %+v after %+v", d, d1)
	}

	got, err := c.GetDeviceWithResponse(ctx, uid, 1, &client.GetDeviceParams{Consistency: ptr(client.GetDeviceParamsConsistencyLinearizable)})
	genCheck(t, "get device 1", got, err, http.StatusOK)
	if *got.JSON200 != *rep.JSON200 {
		t.Fatalf("get device 1: %+v, want %+v", got.JSON200, rep.JSON200)
	}
	if h := got.Headers200; h == nil || h.XServedBy == nil || h.XAppliedIndex == nil {
		t.Fatalf("get device headers: %+v", got.Headers200)
	}

	flags := genWalk(t, "devices", func(cursor *string) ([]int, *string) {
		p, err := c.ListDevicesWithResponse(ctx, uid, &client.ListDevicesParams{Cursor: cursor, Limit: ptr(1)})
		genCheck(t, "list devices", p, err, http.StatusOK)
		var fs []int
		for _, d := range p.JSON200.Items {
			if d.Uid != uid {
				t.Fatalf("listed %+v", d)
			}
			fs = append(fs, d.DeviceFlag)
		}
		return fs, p.JSON200.NextCursor
	})
	if !slices.Equal(flags, []int{0, 1}) {
		t.Fatalf("device flags %v, want [0 1]", flags)
	}

	del, err := c.DeleteDeviceWithResponse(ctx, uid, 0, nil)
	genCheck(t, "delete device 0", del, err, http.StatusNoContent)
	gone, err := c.GetDeviceWithResponse(ctx, uid, 0, nil)
	genCheck(t, "get deleted device", gone, err, http.StatusNotFound)
	genCheckErr(t, "get deleted device", gone.JSON404, client.ErrorCodeNotFound)
	nobody, err := c.PutDeviceWithResponse(ctx, "dev-nobody", 1, nil, client.DeviceUpsert{Token: "t"})
	genCheck(t, "device of a missing user", nobody, err, http.StatusNotFound)
	genCheckErr(t, "device of a missing user", nobody.JSON404, client.ErrorCodeNotFound)

	// Deleting the user deletes its devices.
	du, err := c.DeleteUserWithResponse(ctx, uid, nil)
	genCheck(t, "delete user", du, err, http.StatusNoContent)
	after, err := c.ListDevicesWithResponse(ctx, uid, nil)
	genCheck(t, "devices of a deleted user", after, err, http.StatusNotFound)
}

// --- system UIDs -----------------------------------------------------------

func genSystemUIDs(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	added := map[string]client.SystemUID{}
	for _, uid := range []string{"sys-b", "sys-a", "sys-c"} {
		r, err := c.PutSystemUIDWithResponse(ctx, uid, nil)
		genCheck(t, "put system uid "+uid, r, err, http.StatusOK)
		if s := r.JSON200; s == nil || s.Uid != uid || s.CreatedAtMs == 0 || s.Revision == 0 {
			t.Fatalf("put system uid: %+v", r.JSON200)
		}
		added[uid] = *r.JSON200
	}
	// Adding again changes nothing (same revision).
	again, err := c.PutSystemUIDWithResponse(ctx, "sys-a", &client.PutSystemUIDParams{IdempotencyKey: ptr("sys-a-again")})
	genCheck(t, "put system uid again", again, err, http.StatusOK)
	if *again.JSON200 != added["sys-a"] {
		t.Fatalf("put again: %+v, want %+v", again.JSON200, added["sys-a"])
	}

	list := func() []string {
		return genWalk(t, "system uids", func(cursor *string) ([]string, *string) {
			p, err := c.ListSystemUIDsWithResponse(ctx, &client.ListSystemUIDsParams{Cursor: cursor, Limit: ptr(2)})
			genCheck(t, "list system uids", p, err, http.StatusOK)
			var uids []string
			for _, s := range p.JSON200.Items {
				if s != added[s.Uid] {
					t.Fatalf("listed %+v, added %+v", s, added[s.Uid])
				}
				uids = append(uids, s.Uid)
			}
			return uids, p.JSON200.NextCursor
		})
	}
	if got := list(); !slices.Equal(got, []string{"sys-a", "sys-b", "sys-c"}) {
		t.Fatalf("system uids %v", got)
	}
	del, err := c.DeleteSystemUIDWithResponse(ctx, "sys-b", nil)
	genCheck(t, "delete system uid", del, err, http.StatusNoContent)
	del2, err := c.DeleteSystemUIDWithResponse(ctx, "sys-b", nil)
	genCheck(t, "delete system uid again", del2, err, http.StatusNotFound)
	genCheckErr(t, "delete system uid again", del2.JSON404, client.ErrorCodeNotFound)
	if got := list(); !slices.Equal(got, []string{"sys-a", "sys-c"}) {
		t.Fatalf("system uids after delete %v", got)
	}
}

// --- plugin bindings -------------------------------------------------------

func genPluginBindings(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	genCreateUser(t, ctx, c, "pl-ada")
	genCreateUser(t, ctx, c, "pl-bob")
	const hook = "p.hook"

	cfg := genAny(t, `{"url":"https://example.org/hook","retries":3}`)
	first, err := c.PutUserPluginWithResponse(ctx, "pl-ada", hook, &client.PutUserPluginParams{IdempotencyKey: ptr("pl-ada-hook")},
		client.PluginBindingWrite{Config: cfg})
	genCheck(t, "bind pl-ada", first, err, http.StatusOK)
	b := first.JSON200
	if b == nil || b.Uid != "pl-ada" || b.PluginNo != hook || b.Config == nil || genJSON(t, *b.Config) != genJSON(t, *cfg) || b.CreatedAtMs == 0 {
		t.Fatalf("bind pl-ada: %+v", b)
	}
	// Without a config the binding's config is null.
	bare, err := c.PutUserPluginWithResponse(ctx, "pl-ada", "p2", nil, client.PluginBindingWrite{})
	genCheck(t, "bind pl-ada p2", bare, err, http.StatusOK)
	if bare.JSON200.Config != nil {
		t.Fatalf("config of a bare binding: %v", *bare.JSON200.Config)
	}
	bob, err := c.PutUserPluginWithResponse(ctx, "pl-bob", hook, nil, client.PluginBindingWrite{Config: genAny(t, `[1,"two"]`)})
	genCheck(t, "bind pl-bob", bob, err, http.StatusOK)
	// Replacing the config keeps created_at_ms.
	cfg2 := genAny(t, `{"url":"https://example.org/v2"}`)
	rep, err := c.PutUserPluginWithResponse(ctx, "pl-ada", hook, nil, client.PluginBindingWrite{Config: cfg2})
	genCheck(t, "rebind pl-ada", rep, err, http.StatusOK)
	if r := rep.JSON200; genJSON(t, *r.Config) != genJSON(t, *cfg2) || r.CreatedAtMs != b.CreatedAtMs || r.Revision <= b.Revision {
		t.Fatalf("rebind: %+v after %+v", r, b)
	}
	nobody, err := c.PutUserPluginWithResponse(ctx, "pl-nobody", hook, nil, client.PluginBindingWrite{})
	genCheck(t, "bind a missing user", nobody, err, http.StatusNotFound)
	genCheckErr(t, "bind a missing user", nobody.JSON404, client.ErrorCodeNotFound)

	mine := genWalk(t, "user plugins", func(cursor *string) ([]string, *string) {
		p, err := c.ListUserPluginsWithResponse(ctx, "pl-ada", &client.ListUserPluginsParams{Cursor: cursor, Limit: ptr(1)})
		genCheck(t, "list user plugins", p, err, http.StatusOK)
		var out []string
		for _, b := range p.JSON200.Items {
			out = append(out, b.PluginNo)
		}
		return out, p.JSON200.NextCursor
	})
	if !slices.Equal(mine, []string{hook, "p2"}) {
		t.Fatalf("pl-ada's plugins %v", mine)
	}

	users := func() map[string]string {
		got := map[string]string{}
		for _, b := range genWalk(t, "plugin users", func(cursor *string) ([]client.PluginBinding, *string) {
			p, err := c.ListPluginUsersWithResponse(ctx, hook, &client.ListPluginUsersParams{Cursor: cursor, Limit: ptr(1)})
			genCheck(t, "list plugin users", p, err, http.StatusOK)
			return p.JSON200.Items, p.JSON200.NextCursor
		}) {
			if b.PluginNo != hook {
				t.Fatalf("plugin users of %s: %+v", hook, b)
			}
			got[b.Uid] = genJSON(t, b.Config)
		}
		return got
	}
	if got := users(); len(got) != 2 || got["pl-ada"] != `{"url":"https://example.org/v2"}` || got["pl-bob"] != `[1,"two"]` {
		t.Fatalf("users of %s: %v", hook, got)
	}

	del, err := c.DeleteUserPluginWithResponse(ctx, "pl-ada", hook, nil)
	genCheck(t, "unbind", del, err, http.StatusNoContent)
	del2, err := c.DeleteUserPluginWithResponse(ctx, "pl-ada", hook, nil)
	genCheck(t, "unbind again", del2, err, http.StatusNotFound)
	if got := users(); len(got) != 1 || got["pl-bob"] == "" {
		t.Fatalf("users of %s after unbinding pl-ada: %v", hook, got)
	}
	// Deleting a user deletes its bindings with their index rows.
	du, err := c.DeleteUserWithResponse(ctx, "pl-bob", nil)
	genCheck(t, "delete pl-bob", du, err, http.StatusNoContent)
	if got := users(); len(got) != 0 {
		t.Fatalf("users of %s after deleting pl-bob: %v", hook, got)
	}
	none, err := c.ListPluginUsersWithResponse(ctx, "p-unknown", nil)
	genCheck(t, "users of an unknown plugin", none, err, http.StatusOK)
	if len(none.JSON200.Items) != 0 {
		t.Fatalf("users of an unknown plugin: %+v", none.JSON200.Items)
	}
}

// --- channels --------------------------------------------------------------

func genChannels(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	const id = "team+ops:1" // '+' and ':' travel in the path as they are
	extra := genAny(t, `{"topic":"ops","n":[1,2]}`)
	body := client.ChannelCreate{ChannelId: id, ChannelType: 2, Ban: ptr(true), Extra: extra}
	created, err := c.CreateChannelWithResponse(ctx, &client.CreateChannelParams{IdempotencyKey: ptr("ch-create")}, body)
	genCheck(t, "create channel", created, err, http.StatusCreated)
	ch := created.JSON201
	if ch == nil || ch.ChannelId != id || ch.ChannelType != 2 || !ch.Ban || ch.Disband || ch.SendBan || ch.AllowStranger || ch.Large ||
		ch.Extra == nil || genJSON(t, *ch.Extra) != genJSON(t, *extra) || ch.SubscriberCount != 0 || ch.CreatedAtMs == 0 || ch.Revision == 0 {
		t.Fatalf("created channel: %+v", ch)
	}
	if h := created.Headers201; h == nil || h.Location == nil || *h.Location != "/v1/channels/2/team+ops:1" || h.XHashSlot == nil || *h.XHashSlot != genHashSlot(id) {
		t.Fatalf("create channel headers: %+v", created.Headers201)
	}
	replay, err := c.CreateChannelWithResponse(ctx, &client.CreateChannelParams{IdempotencyKey: ptr("ch-create")}, body)
	genCheck(t, "replayed create channel", replay, err, http.StatusCreated)
	if h := replay.Headers201; h == nil || h.IdempotentReplayed == nil || replay.JSON201.Revision != ch.Revision {
		t.Fatalf("replayed create channel: %+v %+v", replay.Headers201, replay.JSON201)
	}
	dup, err := c.CreateChannelWithResponse(ctx, nil, client.ChannelCreate{ChannelId: id, ChannelType: 2})
	genCheck(t, "second create channel", dup, err, http.StatusConflict)
	genCheckErr(t, "second create channel", dup.JSON409, client.ErrorCodeConflict)

	// PUT replaces the flags (an absent one is false) and extra; created_at_ms stays.
	put, err := c.PutChannelWithResponse(ctx, 2, id, nil, client.ChannelUpsert{Large: ptr(true), SendBan: ptr(true), AllowStranger: ptr(true)})
	genCheck(t, "put channel", put, err, http.StatusOK)
	p := put.JSON200
	if p.Ban || !p.Large || !p.SendBan || !p.AllowStranger || p.Disband || p.Extra != nil || p.CreatedAtMs != ch.CreatedAtMs || p.Revision <= ch.Revision {
		t.Fatalf("put channel: %+v after %+v", p, ch)
	}
	got, err := c.GetChannelWithResponse(ctx, 2, id, &client.GetChannelParams{Consistency: ptr(client.GetChannelParamsConsistencyLocal)})
	genCheck(t, "get channel", got, err, http.StatusOK)
	if g := got.JSON200; g.Revision != p.Revision || g.Large != p.Large || g.Ban != p.Ban || g.UpdatedAtMs != p.UpdatedAtMs {
		t.Fatalf("get channel: %+v, put %+v", g, p)
	}

	// PUT creates too, with the path's id and type in the body allowed.
	other, err := c.PutChannelWithResponse(ctx, 3, id, nil, client.ChannelUpsert{ChannelId: ptr(id), ChannelType: ptr(3), Disband: ptr(true)})
	genCheck(t, "put channel type 3", other, err, http.StatusOK)
	if o := other.JSON200; o.ChannelType != 3 || !o.Disband || o.CreatedAtMs == 0 {
		t.Fatalf("put channel type 3: %+v", o)
	}
	del, err := c.DeleteChannelWithResponse(ctx, 3, id, nil)
	genCheck(t, "delete channel", del, err, http.StatusNoContent)
	gone, err := c.GetChannelWithResponse(ctx, 3, id, nil)
	genCheck(t, "get deleted channel", gone, err, http.StatusNotFound)
	genCheckErr(t, "get deleted channel", gone.JSON404, client.ErrorCodeNotFound)
	still, err := c.GetChannelWithResponse(ctx, 2, id, nil)
	genCheck(t, "the other type stays", still, err, http.StatusOK)
}

// --- subscribers, denylist, allowlist --------------------------------------

// genMemberList is one of a channel's three lists through its own generated
// methods, reduced to the shared shapes (ChannelMembersAdded, …).
type genMemberList struct {
	name   string
	count  func(client.Channel) int64
	add    func(uids ...string) (int, *client.ChannelMembersAdded)
	remove func(uids ...string) (int, *client.ChannelMembersRemoved)
	get    func(uid string) (int, *client.ChannelMember, *client.ErrorBody)
	del    func(uid string) (int, *client.ErrorBody)
	page   func(cursor *string, limit int) (int, *client.ChannelMemberPage)
}

func genMemberLists(t *testing.T, ctx context.Context, c *client.ClientWithResponses, ct int, id string) []genMemberList {
	req := func(uids []string) client.ChannelMembersRequest { return client.ChannelMembersRequest{Uids: uids} }
	ok := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	return []genMemberList{{
		name:  "subscribers",
		count: func(ch client.Channel) int64 { return ch.SubscriberCount },
		add: func(uids ...string) (int, *client.ChannelMembersAdded) {
			r, err := c.AddChannelSubscribersWithResponse(ctx, ct, id, nil, req(uids))
			ok(err)
			return r.StatusCode(), r.JSON200
		},
		remove: func(uids ...string) (int, *client.ChannelMembersRemoved) {
			r, err := c.RemoveChannelSubscribersWithResponse(ctx, ct, id, nil, req(uids))
			ok(err)
			return r.StatusCode(), r.JSON200
		},
		get: func(uid string) (int, *client.ChannelMember, *client.ErrorBody) {
			r, err := c.GetChannelSubscriberWithResponse(ctx, ct, id, uid, nil)
			ok(err)
			return r.StatusCode(), r.JSON200, r.JSON404
		},
		del: func(uid string) (int, *client.ErrorBody) {
			r, err := c.DeleteChannelSubscriberWithResponse(ctx, ct, id, uid, nil)
			ok(err)
			return r.StatusCode(), r.JSON404
		},
		page: func(cursor *string, limit int) (int, *client.ChannelMemberPage) {
			r, err := c.ListChannelSubscribersWithResponse(ctx, ct, id, &client.ListChannelSubscribersParams{Cursor: cursor, Limit: &limit})
			ok(err)
			return r.StatusCode(), r.JSON200
		},
	}, {
		name:  "denylist",
		count: func(ch client.Channel) int64 { return ch.DenylistCount },
		add: func(uids ...string) (int, *client.ChannelMembersAdded) {
			r, err := c.AddChannelDenylistWithResponse(ctx, ct, id, nil, req(uids))
			ok(err)
			return r.StatusCode(), r.JSON200
		},
		remove: func(uids ...string) (int, *client.ChannelMembersRemoved) {
			r, err := c.RemoveChannelDenylistWithResponse(ctx, ct, id, nil, req(uids))
			ok(err)
			return r.StatusCode(), r.JSON200
		},
		get: func(uid string) (int, *client.ChannelMember, *client.ErrorBody) {
			r, err := c.GetChannelDenylistMemberWithResponse(ctx, ct, id, uid, nil)
			ok(err)
			return r.StatusCode(), r.JSON200, r.JSON404
		},
		del: func(uid string) (int, *client.ErrorBody) {
			r, err := c.DeleteChannelDenylistMemberWithResponse(ctx, ct, id, uid, nil)
			ok(err)
			return r.StatusCode(), r.JSON404
		},
		page: func(cursor *string, limit int) (int, *client.ChannelMemberPage) {
			r, err := c.ListChannelDenylistWithResponse(ctx, ct, id, &client.ListChannelDenylistParams{Cursor: cursor, Limit: &limit})
			ok(err)
			return r.StatusCode(), r.JSON200
		},
	}, {
		name:  "allowlist",
		count: func(ch client.Channel) int64 { return ch.AllowlistCount },
		add: func(uids ...string) (int, *client.ChannelMembersAdded) {
			r, err := c.AddChannelAllowlistWithResponse(ctx, ct, id, nil, req(uids))
			ok(err)
			return r.StatusCode(), r.JSON200
		},
		remove: func(uids ...string) (int, *client.ChannelMembersRemoved) {
			r, err := c.RemoveChannelAllowlistWithResponse(ctx, ct, id, nil, req(uids))
			ok(err)
			return r.StatusCode(), r.JSON200
		},
		get: func(uid string) (int, *client.ChannelMember, *client.ErrorBody) {
			r, err := c.GetChannelAllowlistMemberWithResponse(ctx, ct, id, uid, nil)
			ok(err)
			return r.StatusCode(), r.JSON200, r.JSON404
		},
		del: func(uid string) (int, *client.ErrorBody) {
			r, err := c.DeleteChannelAllowlistMemberWithResponse(ctx, ct, id, uid, nil)
			ok(err)
			return r.StatusCode(), r.JSON404
		},
		page: func(cursor *string, limit int) (int, *client.ChannelMemberPage) {
			r, err := c.ListChannelAllowlistWithResponse(ctx, ct, id, &client.ListChannelAllowlistParams{Cursor: cursor, Limit: &limit})
			ok(err)
			return r.StatusCode(), r.JSON200
		},
	}}
}

func genChannelLists(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	const ct, id = 2, "lists-1"
	cr, err := c.CreateChannelWithResponse(ctx, nil, client.ChannelCreate{ChannelId: id, ChannelType: ct})
	genCheck(t, "create channel", cr, err, http.StatusCreated)
	channel := func() client.Channel {
		t.Helper()
		r, err := c.GetChannelWithResponse(ctx, ct, id, nil)
		genCheck(t, "get channel", r, err, http.StatusOK)
		return *r.JSON200
	}

	for _, l := range genMemberLists(t, ctx, c, ct, id) {
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf(l.name+": "+format, args...)
		}
		p := l.name[:1] + "-" // distinct uids per list
		code, added := l.add(p+"a", p+"b", p+"a", p+"c")
		if code != http.StatusOK || added.Added != 3 || added.Count != 3 {
			fail("add: %d %+v", code, added)
		}
		code, added = l.add(p+"c", p+"d")
		if code != http.StatusOK || added.Added != 1 || added.Count != 4 {
			fail("add again: %d %+v", code, added)
		}
		if n := l.count(channel()); n != 4 {
			fail("the channel counts %d, want 4", n)
		}
		code, m, _ := l.get(p + "b")
		if code != http.StatusOK || m.Uid != p+"b" || m.AddedAtMs == 0 {
			fail("get member: %d %+v", code, m)
		}
		code, _, e := l.get(p + "zz")
		if code != http.StatusNotFound {
			fail("get a non-member: %d", code)
		}
		genCheckErr(t, l.name+": get a non-member", e, client.ErrorCodeNotFound)
		code, removed := l.remove(p+"a", p+"zz")
		if code != http.StatusOK || removed.Removed != 1 || removed.Count != 3 {
			fail("remove: %d %+v", code, removed)
		}
		list := func() []string {
			return genWalk(t, l.name, func(cursor *string) ([]string, *string) {
				code, page := l.page(cursor, 2)
				if code != http.StatusOK {
					fail("list: %d", code)
				}
				var uids []string
				for _, m := range page.Items {
					uids = append(uids, m.Uid)
				}
				return uids, page.NextCursor
			})
		}
		if got := list(); !slices.Equal(got, []string{p + "b", p + "c", p + "d"}) {
			fail("list: %v", got)
		}
		if code, _ := l.del(p + "b"); code != http.StatusNoContent {
			fail("delete member: %d", code)
		}
		if code, e := l.del(p + "b"); code != http.StatusNotFound {
			fail("delete member again: %d", code)
		} else {
			genCheckErr(t, l.name+": delete member again", e, client.ErrorCodeNotFound)
		}
		if got := list(); !slices.Equal(got, []string{p + "c", p + "d"}) {
			fail("list after delete: %v", got)
		}
		if n := l.count(channel()); n != 2 {
			fail("the channel counts %d, want 2", n)
		}
	}

	// Subscribing and unsubscribing keep each user's membership, in the
	// user's own group, in step: once the channel owes no projection work,
	// the remaining subscribers are members and the removed ones tombstones.
	testutil.WaitFor(t, 10*time.Second, 20*time.Millisecond, func() (bool, string) {
		ch := channel()
		return ch.PendingProjection == 0, fmt.Sprintf("projection work still pending: %+v", ch)
	})
	for uid, left := range map[string]bool{"s-a": true, "s-b": true, "s-c": false, "s-d": false} {
		r, err := c.GetMembershipWithResponse(ctx, uid, ct, id, nil)
		genCheck(t, "membership of "+uid, r, err, http.StatusOK)
		if m := r.JSON200; m.Uid != uid || m.ChannelType != ct || m.ChannelId != id || m.Tombstone != left {
			t.Fatalf("membership of %s (left: %v): %+v", uid, left, m)
		}
	}
	l, err := c.ListMembershipsWithResponse(ctx, "s-c", nil)
	genCheck(t, "memberships of s-c", l, err, http.StatusOK)
	if items := l.JSON200.Items; len(items) != 1 || items[0].ChannelId != id {
		t.Fatalf("memberships of s-c: %+v", items)
	}
}

// --- memberships -----------------------------------------------------------

func genMemberships(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	const uid = "mb-ada"
	put, err := c.PutMembershipWithResponse(ctx, uid, 2, "g1", &client.PutMembershipParams{IdempotencyKey: ptr("mb-put")},
		client.MembershipUpsert{JoinSeq: ptr[int64](1), ReadSeq: ptr[int64](2), DeletedToSeq: ptr[int64](0), ActivatedAtMs: ptr[int64](5), Tombstone: ptr(false)})
	genCheck(t, "put membership", put, err, http.StatusOK)
	m := put.JSON200
	if m.Uid != uid || m.ChannelType != 2 || m.ChannelId != "g1" || m.JoinSeq != 1 || m.ReadSeq != 2 || m.DeletedToSeq != 0 ||
		m.ActivatedAtMs != 5 || m.Tombstone || m.CreatedAtMs == 0 || m.Revision == 0 {
		t.Fatalf("put membership: %+v", m)
	}
	if h := put.Headers200; h == nil || h.XHashSlot == nil || *h.XHashSlot != genHashSlot(uid) {
		t.Fatalf("put membership headers: %+v", put.Headers200)
	}
	g0, err := c.PutMembershipWithResponse(ctx, uid, 1, "g0", nil, client.MembershipUpsert{ActivatedAtMs: ptr[int64](10)})
	genCheck(t, "put membership g0", g0, err, http.StatusOK)
	gone, err := c.PutMembershipWithResponse(ctx, uid, 3, "gone", nil, client.MembershipUpsert{Tombstone: ptr(true)})
	genCheck(t, "put tombstone", gone, err, http.StatusOK)
	if !gone.JSON200.Tombstone {
		t.Fatalf("tombstone: %+v", gone.JSON200)
	}

	// read_seq and deleted_to_seq never move backwards.
	read, err := c.ReadMembershipWithResponse(ctx, uid, 2, "g1", nil, client.MembershipRead{ReadSeq: 9})
	genCheck(t, "read", read, err, http.StatusOK)
	if read.JSON200.ReadSeq != 9 {
		t.Fatalf("read: %+v", read.JSON200)
	}
	back, err := c.ReadMembershipWithResponse(ctx, uid, 2, "g1", nil, client.MembershipRead{ReadSeq: 1})
	genCheck(t, "read backwards", back, err, http.StatusOK)
	if back.JSON200.ReadSeq != 9 || back.JSON200.Revision != read.JSON200.Revision {
		t.Fatalf("read backwards: %+v after %+v", back.JSON200, read.JSON200)
	}
	hide, err := c.HideMembershipWithResponse(ctx, uid, 2, "g1", nil, client.MembershipHide{ToSeq: 3})
	genCheck(t, "hide", hide, err, http.StatusOK)
	if hide.JSON200.DeletedToSeq != 3 || hide.JSON200.ReadSeq != 9 {
		t.Fatalf("hide: %+v", hide.JSON200)
	}
	act, err := c.ActivateMembershipWithResponse(ctx, uid, 2, "g1", &client.ActivateMembershipParams{IdempotencyKey: ptr("mb-activate")})
	genCheck(t, "activate", act, err, http.StatusOK)
	if act.JSON200.ActivatedAtMs <= 10 {
		t.Fatalf("activate: %+v", act.JSON200)
	}
	get, err := c.GetMembershipWithResponse(ctx, uid, 2, "g1", &client.GetMembershipParams{Consistency: ptr(client.GetMembershipParamsConsistencyLinearizable)})
	genCheck(t, "get membership", get, err, http.StatusOK)
	if *get.JSON200 != *act.JSON200 {
		t.Fatalf("get membership: %+v, want %+v", get.JSON200, act.JSON200)
	}

	// Newest activity first; the tombstone is not listed.
	order := genWalk(t, "memberships", func(cursor *string) ([]string, *string) {
		p, err := c.ListMembershipsWithResponse(ctx, uid, &client.ListMembershipsParams{Cursor: cursor, Limit: ptr(1)})
		genCheck(t, "list memberships", p, err, http.StatusOK)
		var out []string
		for _, m := range p.JSON200.Items {
			out = append(out, fmt.Sprintf("%d/%s", m.ChannelType, m.ChannelId))
		}
		return out, p.JSON200.NextCursor
	})
	if !slices.Equal(order, []string{"2/g1", "1/g0"}) {
		t.Fatalf("memberships %v, want [2/g1 1/g0]", order)
	}
	ts, err := c.GetMembershipWithResponse(ctx, uid, 3, "gone", nil)
	genCheck(t, "get tombstone", ts, err, http.StatusOK)
	if !ts.JSON200.Tombstone {
		t.Fatalf("tombstone: %+v", ts.JSON200)
	}
	del, err := c.DeleteMembershipWithResponse(ctx, uid, 3, "gone", nil)
	genCheck(t, "delete membership", del, err, http.StatusNoContent)
	nf, err := c.GetMembershipWithResponse(ctx, uid, 3, "gone", nil)
	genCheck(t, "get deleted membership", nf, err, http.StatusNotFound)
	genCheckErr(t, "get deleted membership", nf.JSON404, client.ErrorCodeNotFound)
	nr, err := c.ReadMembershipWithResponse(ctx, uid, 3, "gone", nil, client.MembershipRead{ReadSeq: 1})
	genCheck(t, "read a deleted membership", nr, err, http.StatusNotFound)

	// A stale route revision is refused with the node's.
	stale, err := c.GetMembershipWithResponse(ctx, uid, 2, "g1", &client.GetMembershipParams{XRouteRevision: ptr[int64](0)})
	genCheck(t, "stale route revision", stale, err, http.StatusConflict)
	genCheckErr(t, "stale route revision", stale.JSON409, client.ErrorCodeRouteRevisionMismatch)
	if rr := stale.JSON409.Error.RouteRevision; rr == nil || *rr < 1 {
		t.Fatalf("route_revision_mismatch without the node's revision: %+v", stale.JSON409.Error)
	}
	cur, err := c.GetMembershipWithResponse(ctx, uid, 2, "g1", &client.GetMembershipParams{XRouteRevision: stale.JSON409.Error.RouteRevision})
	genCheck(t, "current route revision", cur, err, http.StatusOK)
}

// --- CMD bindings ----------------------------------------------------------

func genCmdBindings(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	const uid = "cmd-ada"
	put, err := c.PutCmdBindingWithResponse(ctx, uid, 1, "c1", nil, client.CmdBindingUpsert{StartSeq: 4})
	genCheck(t, "put cmd binding", put, err, http.StatusOK)
	b := put.JSON200
	if b.Uid != uid || b.ChannelType != 1 || b.ChannelId != "c1" || b.StartSeq != 4 || b.AckSeq != 0 || b.CreatedAtMs == 0 {
		t.Fatalf("put cmd binding: %+v", b)
	}
	ack, err := c.AckCmdBindingWithResponse(ctx, uid, 1, "c1", &client.AckCmdBindingParams{IdempotencyKey: ptr("cmd-ack-6")}, client.CmdBindingAck{AckSeq: 6})
	genCheck(t, "ack", ack, err, http.StatusOK)
	if ack.JSON200.AckSeq != 6 || ack.JSON200.StartSeq != 4 {
		t.Fatalf("ack: %+v", ack.JSON200)
	}
	back, err := c.AckCmdBindingWithResponse(ctx, uid, 1, "c1", nil, client.CmdBindingAck{AckSeq: 2})
	genCheck(t, "ack backwards", back, err, http.StatusOK)
	if back.JSON200.AckSeq != 6 || back.JSON200.Revision != ack.JSON200.Revision {
		t.Fatalf("ack backwards: %+v after %+v", back.JSON200, ack.JSON200)
	}
	// An upsert sets start_seq and keeps ack_seq.
	re, err := c.PutCmdBindingWithResponse(ctx, uid, 1, "c1", nil, client.CmdBindingUpsert{StartSeq: 5})
	genCheck(t, "re-put cmd binding", re, err, http.StatusOK)
	if re.JSON200.StartSeq != 5 || re.JSON200.AckSeq != 6 || re.JSON200.CreatedAtMs != b.CreatedAtMs {
		t.Fatalf("re-put: %+v", re.JSON200)
	}
	c2, err := c.PutCmdBindingWithResponse(ctx, uid, 1, "c2", nil, client.CmdBindingUpsert{StartSeq: 0})
	genCheck(t, "put c2", c2, err, http.StatusOK)
	get, err := c.GetCmdBindingWithResponse(ctx, uid, 1, "c1", nil)
	genCheck(t, "get cmd binding", get, err, http.StatusOK)
	if *get.JSON200 != *re.JSON200 {
		t.Fatalf("get: %+v, want %+v", get.JSON200, re.JSON200)
	}
	ids := genWalk(t, "cmd bindings", func(cursor *string) ([]string, *string) {
		p, err := c.ListCmdBindingsWithResponse(ctx, uid, &client.ListCmdBindingsParams{Cursor: cursor, Limit: ptr(1)})
		genCheck(t, "list cmd bindings", p, err, http.StatusOK)
		var out []string
		for _, b := range p.JSON200.Items {
			out = append(out, b.ChannelId)
		}
		return out, p.JSON200.NextCursor
	})
	if !slices.Equal(ids, []string{"c1", "c2"}) {
		t.Fatalf("cmd bindings %v", ids)
	}
	del, err := c.DeleteCmdBindingWithResponse(ctx, uid, 1, "c2", nil)
	genCheck(t, "delete cmd binding", del, err, http.StatusNoContent)
	nf, err := c.GetCmdBindingWithResponse(ctx, uid, 1, "c2", nil)
	genCheck(t, "get deleted cmd binding", nf, err, http.StatusNotFound)
	genCheckErr(t, "get deleted cmd binding", nf.JSON404, client.ErrorCodeNotFound)
	na, err := c.AckCmdBindingWithResponse(ctx, uid, 1, "c2", nil, client.CmdBindingAck{AckSeq: 1})
	genCheck(t, "ack a deleted binding", na, err, http.StatusNotFound)
}

// --- batch reads of users, channels and runtime meta ----------------------

// genBatchReads: each batch read answers every item in order — found with
// the row as its GET shows it, not found, or an invalid item's own error —
// and refuses more than 1 000 items with 413.
func genBatchReads(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	u, err := c.CreateUserWithResponse(ctx, nil, client.UserCreate{Uid: "batch-u", Name: ptr("Batch")})
	genCheck(t, "create user", u, err, http.StatusCreated)
	users, err := c.BatchGetUsersWithResponse(ctx, nil, client.BatchUIDs{Uids: []string{"nobody", "batch-u", "bad uid"}})
	genCheck(t, "batch users", users, err, http.StatusOK)
	ui := users.JSON200.Items
	if len(ui) != 3 || ui[0].Found || ui[0].Error != nil || !ui[1].Found || ui[1].User == nil || ui[1].User.Name != "Batch" ||
		ui[1].User.Revision != u.JSON201.Revision || ui[2].Error == nil || ui[2].Error.Code != client.ErrorCodeInvalidArgument ||
		ui[2].Uid != "bad uid" || users.JSON200.RouteRevision == 0 {
		t.Fatalf("batch users: %s", users.Body)
	}

	ch, err := c.CreateChannelWithResponse(ctx, nil, client.ChannelCreate{ChannelType: 2, ChannelId: "batch-ch"})
	genCheck(t, "create channel", ch, err, http.StatusCreated)
	rt, err := c.CreateChannelRuntimeWithResponse(ctx, 2, "batch-ch", nil, client.ChannelRuntimeWrite{
		ChannelEpoch: 1, LeaderEpoch: 1, Leader: 1, Replicas: client.NodeIDList{1}, Isr: client.NodeIDList{1}, MinIsr: 1})
	genCheck(t, "create runtime", rt, err, http.StatusCreated)
	refs := []client.ChannelRef{{ChannelType: 2, ChannelId: "batch-ch"}, {ChannelType: 3, ChannelId: "batch-ch"}, {ChannelType: 0, ChannelId: "x"}, {ChannelType: 2, ChannelId: "a/b"}}
	chans, err := c.BatchGetChannelsWithResponse(ctx, nil, client.BatchChannels{Channels: refs})
	genCheck(t, "batch channels", chans, err, http.StatusOK)
	ci := chans.JSON200.Items
	if len(ci) != 4 || !ci[0].Found || ci[0].Channel == nil || ci[0].Channel.ChannelId != "batch-ch" || ci[0].Channel.Revision != ch.JSON201.Revision ||
		ci[1].Found || ci[1].Error != nil || ci[1].ChannelType != 3 || ci[2].Error == nil || ci[3].Error == nil || ci[3].Error.Code != client.ErrorCodeInvalidArgument {
		t.Fatalf("batch channels: %s", chans.Body)
	}
	rts, err := c.BatchGetChannelRuntimeWithResponse(ctx, &client.BatchGetChannelRuntimeParams{Consistency: ptr(client.BatchGetChannelRuntimeParamsConsistency("local"))},
		client.BatchChannels{Channels: refs[:2]})
	genCheck(t, "batch runtime", rts, err, http.StatusOK)
	ri := rts.JSON200.Items
	if len(ri) != 2 || !ri[0].Found || ri[0].Runtime == nil || ri[0].Runtime.Leader != 1 || ri[0].Runtime.Revision != rt.JSON201.Revision || ri[1].Found {
		t.Fatalf("batch runtime: %s", rts.Body)
	}

	over := make([]string, 1001)
	for i := range over {
		over[i] = fmt.Sprintf("u%d", i)
	}
	big, err := c.BatchGetUsersWithResponse(ctx, nil, client.BatchUIDs{Uids: over})
	genCheck(t, "batch users over the bound", big, err, http.StatusRequestEntityTooLarge)
	genCheckErr(t, "batch users over the bound", big.JSON413, client.ErrorCodePayloadTooLarge)
}

// --- channel runtime meta --------------------------------------------------

func genChannelRuntime(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	const ct, id = 2, "rt-room"
	none, err := c.GetChannelRuntimeWithResponse(ctx, ct, id, nil)
	genCheck(t, "get absent runtime", none, err, http.StatusNotFound)

	fence := client.WriteFence{Token: "fence-1", Version: ptr[int64](1), Reason: ptr("switching"), UntilMs: ptr[int64](5)}
	w := client.ChannelRuntimeWrite{
		ChannelEpoch: 2, LeaderEpoch: 1, Leader: 1, Replicas: client.NodeIDList{1, 2, 3}, Isr: client.NodeIDList{1, 2}, MinIsr: 2,
		Status: ptr(client.RuntimeStatusMigrating), LeaseUntilMs: ptr[int64](100), RetentionThroughSeq: ptr[int64](0), WriteFence: &fence,
	}
	created, err := c.CreateChannelRuntimeWithResponse(ctx, ct, id, nil, w)
	genCheck(t, "create runtime", created, err, http.StatusCreated)
	rt := created.JSON201
	if rt.ChannelType != ct || rt.ChannelId != id || rt.ChannelEpoch != 2 || rt.LeaderEpoch != 1 || rt.Leader != 1 ||
		!slices.Equal(rt.Replicas, []int64{1, 2, 3}) || !slices.Equal(rt.Isr, []int64{1, 2}) || rt.MinIsr != 2 ||
		rt.Status != client.RuntimeStatusMigrating || rt.LeaseUntilMs != 100 || rt.RetentionThroughSeq != 0 ||
		rt.WriteFence == nil || genJSON(t, *rt.WriteFence) != genJSON(t, fence) || rt.CreatedAtMs == 0 {
		t.Fatalf("created runtime: %+v (fence %+v)", rt, rt.WriteFence)
	}
	if h := created.Headers201; h == nil || h.Location == nil || *h.Location != "/v1/channels/2/rt-room/runtime" {
		t.Fatalf("create runtime headers: %+v", created.Headers201)
	}
	dup, err := c.CreateChannelRuntimeWithResponse(ctx, ct, id, nil, w)
	genCheck(t, "create runtime again", dup, err, http.StatusConflict)
	genCheckErr(t, "create runtime again", dup.JSON409, client.ErrorCodeConflict)

	got, err := c.GetChannelRuntimeWithResponse(ctx, ct, id, nil)
	genCheck(t, "get runtime", got, err, http.StatusOK)
	if genJSON(t, got.JSON200) != genJSON(t, rt) {
		t.Fatalf("get runtime: %s, want %s", genJSON(t, got.JSON200), genJSON(t, rt))
	}

	// Same epochs and leader: applies; no fence clears it; the lease never moves back.
	same := w
	same.WriteFence, same.LeaseUntilMs, same.Status = nil, ptr[int64](50), ptr(client.RuntimeStatusActive)
	put, err := c.PutChannelRuntimeWithResponse(ctx, ct, id, nil, same)
	genCheck(t, "put runtime", put, err, http.StatusOK)
	if p := put.JSON200; p.WriteFence != nil || p.LeaseUntilMs != 100 || p.Status != client.RuntimeStatusActive || p.Revision <= rt.Revision || p.CreatedAtMs != rt.CreatedAtMs {
		t.Fatalf("put runtime: %+v", p)
	}
	older := same
	older.ChannelEpoch = 1
	stale, err := c.PutChannelRuntimeWithResponse(ctx, ct, id, nil, older)
	genCheck(t, "put older epochs", stale, err, http.StatusConflict)
	genCheckErr(t, "put older epochs", stale.JSON409, client.ErrorCodeEpochStale)
	otherLeader := same
	otherLeader.Leader = 2
	cf, err := c.PutChannelRuntimeWithResponse(ctx, ct, id, nil, otherLeader)
	genCheck(t, "put another leader at the same epochs", cf, err, http.StatusConflict)
	genCheckErr(t, "put another leader at the same epochs", cf.JSON409, client.ErrorCodeConflict)
	newer := otherLeader
	newer.LeaderEpoch = 2
	nl, err := c.PutChannelRuntimeWithResponse(ctx, ct, id, nil, newer)
	genCheck(t, "put a newer leader epoch", nl, err, http.StatusOK)
	if nl.JSON200.Leader != 2 || nl.JSON200.LeaderEpoch != 2 {
		t.Fatalf("newer leader epoch: %+v", nl.JSON200)
	}

	// Retention: guarded by epoch and leader, never backwards.
	ret, err := c.AdvanceChannelRetentionWithResponse(ctx, ct, id, nil, client.RetentionAdvance{ExpectedChannelEpoch: 2, ExpectedLeader: 2, ThroughSeq: 10})
	genCheck(t, "advance retention", ret, err, http.StatusOK)
	if ret.JSON200.RetentionThroughSeq != 10 {
		t.Fatalf("retention: %+v", ret.JSON200)
	}
	rb, err := c.AdvanceChannelRetentionWithResponse(ctx, ct, id, nil, client.RetentionAdvance{ExpectedChannelEpoch: 2, ExpectedLeader: 2, ThroughSeq: 5})
	genCheck(t, "retention backwards", rb, err, http.StatusOK)
	if rb.JSON200.RetentionThroughSeq != 10 || rb.JSON200.Revision != ret.JSON200.Revision {
		t.Fatalf("retention backwards: %+v", rb.JSON200)
	}
	wrong, err := c.AdvanceChannelRetentionWithResponse(ctx, ct, id, nil, client.RetentionAdvance{ExpectedChannelEpoch: 2, ExpectedLeader: 1, ThroughSeq: 20})
	genCheck(t, "retention under a stale leader", wrong, err, http.StatusConflict)
	genCheckErr(t, "retention under a stale leader", wrong.JSON409, client.ErrorCodeConflict)

	// PUT keeps retention_through_seq from moving back, too.
	keep := newer
	keep.RetentionThroughSeq = ptr[int64](3)
	kept, err := c.PutChannelRuntimeWithResponse(ctx, ct, id, nil, keep)
	genCheck(t, "put a lower retention", kept, err, http.StatusOK)
	if kept.JSON200.RetentionThroughSeq != 10 {
		t.Fatalf("put a lower retention: %+v", kept.JSON200)
	}
	// PUT creates when there is none.
	fresh, err := c.PutChannelRuntimeWithResponse(ctx, ct, id+"-2", nil, client.ChannelRuntimeWrite{
		ChannelEpoch: 1, LeaderEpoch: 1, Leader: 3, Replicas: client.NodeIDList{3}, Isr: client.NodeIDList{3}, MinIsr: 1})
	genCheck(t, "put a new runtime", fresh, err, http.StatusOK)
	if f := fresh.JSON200; f.ChannelId != id+"-2" || f.Leader != 3 || f.Status != client.RuntimeStatusActive || f.WriteFence != nil || f.CreatedAtMs == 0 {
		t.Fatalf("put a new runtime: %+v", f)
	}

	del, err := c.DeleteChannelRuntimeWithResponse(ctx, ct, id, nil)
	genCheck(t, "delete runtime", del, err, http.StatusNoContent)
	gone, err := c.GetChannelRuntimeWithResponse(ctx, ct, id, nil)
	genCheck(t, "get deleted runtime", gone, err, http.StatusNotFound)
	genCheckErr(t, "get deleted runtime", gone.JSON404, client.ErrorCodeNotFound)
}

// --- channel migration tasks -----------------------------------------------

func genChannelMigrations(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	const ct, id = 2, "mig-room"
	created, err := c.CreateChannelMigrationWithResponse(ctx, ct, id, nil,
		client.ChannelMigrationCreate{Kind: client.MigrationKindReplicaMove, SourceNode: 1, TargetNode: 2})
	genCheck(t, "create migration", created, err, http.StatusCreated)
	m := created.JSON201
	if m.ChannelType != ct || m.ChannelId != id || m.TaskId != 1 || m.Kind != client.MigrationKindReplicaMove || m.SourceNode != 1 ||
		m.TargetNode != 2 || m.Phase != client.MigrationPhaseCreated || !m.Active || m.FinishedAtMs != nil || m.CreatedAtMs == 0 {
		t.Fatalf("created migration: %+v", m)
	}
	if h := created.Headers201; h == nil || h.Location == nil || *h.Location != "/v1/channels/2/mig-room/migrations/1" {
		t.Fatalf("create migration headers: %+v", created.Headers201)
	}
	busy, err := c.CreateChannelMigrationWithResponse(ctx, ct, id, nil,
		client.ChannelMigrationCreate{Kind: client.MigrationKindLeaderTransfer, SourceNode: 1, TargetNode: 2})
	genCheck(t, "second active migration", busy, err, http.StatusConflict)
	genCheckErr(t, "second active migration", busy.JSON409, client.ErrorCodeConflict)

	get, err := c.GetChannelMigrationWithResponse(ctx, ct, id, m.TaskId, nil)
	genCheck(t, "get migration", get, err, http.StatusOK)
	if genJSON(t, get.JSON200) != genJSON(t, m) {
		t.Fatalf("get migration: %+v, want %+v", get.JSON200, m)
	}

	adv, err := c.AdvanceChannelMigrationWithResponse(ctx, ct, id, m.TaskId, nil,
		client.ChannelMigrationAdvance{ExpectedPhase: client.MigrationStepPhaseCreated, Phase: client.MigrationStepPhaseCopying, Note: ptr("copying 1/3")})
	genCheck(t, "advance", adv, err, http.StatusOK)
	if a := adv.JSON200; a.Phase != client.MigrationPhaseCopying || a.Note != "copying 1/3" || !a.Active || a.Revision <= m.Revision {
		t.Fatalf("advanced: %+v", a)
	}
	cas, err := c.AdvanceChannelMigrationWithResponse(ctx, ct, id, m.TaskId, nil,
		client.ChannelMigrationAdvance{ExpectedPhase: client.MigrationStepPhaseCreated, Phase: client.MigrationStepPhaseDone})
	genCheck(t, "advance from a stale phase", cas, err, http.StatusConflict)
	genCheckErr(t, "advance from a stale phase", cas.JSON409, client.ErrorCodeConflict)
	done, err := c.AdvanceChannelMigrationWithResponse(ctx, ct, id, m.TaskId, nil,
		client.ChannelMigrationAdvance{ExpectedPhase: client.MigrationStepPhaseCopying, Phase: client.MigrationStepPhaseDone})
	genCheck(t, "advance to done", done, err, http.StatusOK)
	if d := done.JSON200; d.Phase != client.MigrationPhaseDone || d.Active || d.FinishedAtMs == nil || *d.FinishedAtMs == 0 {
		t.Fatalf("done: %+v", d)
	}
	ab, err := c.AbortChannelMigrationWithResponse(ctx, ct, id, m.TaskId, nil, client.ChannelMigrationAbort{})
	genCheck(t, "abort a done task", ab, err, http.StatusConflict)
	genCheckErr(t, "abort a done task", ab.JSON409, client.ErrorCodeConflict)

	second, err := c.CreateChannelMigrationWithResponse(ctx, ct, id, &client.CreateChannelMigrationParams{IdempotencyKey: ptr("mig-2")},
		client.ChannelMigrationCreate{Kind: client.MigrationKindLeaderTransfer, SourceNode: 2, TargetNode: 1})
	genCheck(t, "create second migration", second, err, http.StatusCreated)
	if second.JSON201.TaskId != 2 || second.JSON201.Kind != client.MigrationKindLeaderTransfer {
		t.Fatalf("second migration: %+v", second.JSON201)
	}
	abort, err := c.AbortChannelMigrationWithResponse(ctx, ct, id, 2, nil, client.ChannelMigrationAbort{Note: ptr("target drained")})
	genCheck(t, "abort", abort, err, http.StatusOK)
	if a := abort.JSON200; a.Phase != client.MigrationPhaseAborted || a.Active || a.Note != "target drained" || a.FinishedAtMs == nil {
		t.Fatalf("aborted: %+v", a)
	}

	// Newest first.
	ids := genWalk(t, "migrations", func(cursor *string) ([]int64, *string) {
		p, err := c.ListChannelMigrationsWithResponse(ctx, ct, id, &client.ListChannelMigrationsParams{Cursor: cursor, Limit: ptr(1)})
		genCheck(t, "list migrations", p, err, http.StatusOK)
		var out []int64
		for _, m := range p.JSON200.Items {
			out = append(out, m.TaskId)
		}
		return out, p.JSON200.NextCursor
	})
	if !slices.Equal(ids, []int64{2, 1}) {
		t.Fatalf("migrations %v, want [2 1]", ids)
	}
	nf, err := c.GetChannelMigrationWithResponse(ctx, ct, id, 9, nil)
	genCheck(t, "get a missing migration", nf, err, http.StatusNotFound)
	genCheckErr(t, "get a missing migration", nf.JSON404, client.ErrorCodeNotFound)
}

// --- message events --------------------------------------------------------

func genMessageEvents(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	const ct, id = 2, "ev-room"
	payload := genAny(t, `{"a":[1,{"b":null}],"s":"x"}`)
	first, err := c.AppendChannelEventWithResponse(ctx, ct, id, nil, client.ChannelEventAppend{
		ClientMsgNo: "m-1", EventKey: "k", EventId: "e-1", EventType: "stream.delta", Status: ptr("open"), Payload: payload})
	genCheck(t, "append", first, err, http.StatusCreated)
	e := first.JSON201
	if e.ChannelType != ct || e.ChannelId != id || e.Seq != 1 || e.ClientMsgNo != "m-1" || e.EventKey != "k" || e.EventId != "e-1" ||
		e.EventType != "stream.delta" || e.Status != "open" || e.Payload == nil || genJSON(t, *e.Payload) != genJSON(t, *payload) || e.CreatedAtMs == 0 {
		t.Fatalf("appended: %+v", e)
	}
	// An Idempotency-Key makes a retried append answer the first result.
	body := client.ChannelEventAppend{ClientMsgNo: "m-1", EventKey: "k", EventId: "e-2", EventType: "stream.end"}
	second, err := c.AppendChannelEventWithResponse(ctx, ct, id, &client.AppendChannelEventParams{IdempotencyKey: ptr("ev-2")}, body)
	genCheck(t, "append e-2", second, err, http.StatusCreated)
	retry, err := c.AppendChannelEventWithResponse(ctx, ct, id, &client.AppendChannelEventParams{IdempotencyKey: ptr("ev-2")}, body)
	genCheck(t, "retried append e-2", retry, err, http.StatusCreated)
	if second.JSON201.Seq != 2 || second.JSON201.Payload != nil || second.JSON201.Status != "" || retry.JSON201.Seq != 2 ||
		retry.Headers201 == nil || retry.Headers201.IdempotentReplayed == nil {
		t.Fatalf("append e-2: %+v, retried %+v %+v", second.JSON201, retry.JSON201, retry.Headers201)
	}
	third, err := c.AppendChannelEventWithResponse(ctx, ct, id, nil, client.ChannelEventAppend{ClientMsgNo: "m-2", EventKey: "k", EventId: "e-3", EventType: "t"})
	genCheck(t, "append e-3", third, err, http.StatusCreated)

	var count, lastSeq int64
	events := genWalk(t, "events", func(cursor *string) ([]client.ChannelEvent, *string) {
		p, err := c.ListChannelEventsWithResponse(ctx, ct, id, &client.ListChannelEventsParams{Cursor: cursor, Limit: ptr(2)})
		genCheck(t, "list events", p, err, http.StatusOK)
		count, lastSeq = p.JSON200.Count, p.JSON200.LastSeq
		return p.JSON200.Items, p.JSON200.NextCursor
	})
	var seqs []int64
	for _, e := range events {
		seqs = append(seqs, e.Seq)
	}
	if !slices.Equal(seqs, []int64{3, 2, 1}) || count != 3 || lastSeq != 3 {
		t.Fatalf("events %v, count %d, last_seq %d", seqs, count, lastSeq)
	}
	if genJSON(t, events[2]) != genJSON(t, e) {
		t.Fatalf("listed %s, appended %s", genJSON(t, events[2]), genJSON(t, e))
	}
}

// --- cluster ---------------------------------------------------------------

func genCluster(t *testing.T, c *client.ClientWithResponses, cn *cluster.Node) {
	ctx := genCtx(t)

	sum, err := c.GetClusterWithResponse(ctx)
	genCheck(t, "cluster", sum, err, http.StatusOK)
	s := sum.JSON200
	if s.ClusterId == "" || s.NodeId == 0 || s.Nodes != 1 || s.Groups != 4 || s.RouteRevision < 1 || s.ControllerLeader != s.NodeId || !s.Ready {
		t.Fatalf("cluster: %+v", s)
	}
	self := s.NodeId
	// Before the leader's first observation the cluster records no
	// version (0.1): the features of 0.2 are refused, naming themselves.
	if s.ClusterVersion == nil || *s.ClusterVersion != "0.1" || s.Version == nil || *s.Version != "0.2" {
		t.Fatalf("versions before the first observation: %v %v", s.ClusterVersion, s.Version)
	}
	early, err := c.CheckGroupWithResponse(ctx, 1)
	genCheck(t, "a state check at cluster version 0.1", early, err, http.StatusPreconditionFailed)
	genCheckErr(t, "a state check at cluster version 0.1", early.JSON412, client.ErrorCodeFailedPrecondition)

	nodes, err := c.ListNodesWithResponse(ctx)
	genCheck(t, "nodes", nodes, err, http.StatusOK)
	if l := nodes.JSON200; len(l.Items) != 1 || l.Items[0].Id != self || l.Items[0].RaftAddr == "" || l.NextCursor != "" {
		t.Fatalf("nodes: %+v", l)
	}
	me := nodes.JSON200.Items[0]
	if me.State == nil || *me.State != client.NodeStateActive {
		t.Fatalf("node state: %+v", me)
	}
	reg, err := c.RegisterNodeWithResponse(ctx, client.RegisterNodeRequest{Id: me.Id, RaftAddr: me.RaftAddr})
	genCheck(t, "register the same node again", reg, err, http.StatusOK)
	if reg.JSON200.Id != self || reg.JSON200.RaftAddr != me.RaftAddr {
		t.Fatalf("registered: %+v", reg.JSON200)
	}
	clash, err := c.RegisterNodeWithResponse(ctx, client.RegisterNodeRequest{Id: me.Id, RaftAddr: "127.0.0.1:1"})
	genCheck(t, "register the node elsewhere", clash, err, http.StatusConflict)
	genCheckErr(t, "register the node elsewhere", clash.JSON409, client.ErrorCodeConflict)

	routes, err := c.GetRoutesWithResponse(ctx)
	genCheck(t, "routes", routes, err, http.StatusOK)
	table := routes.JSON200
	if table.Revision != s.RouteRevision || len(table.HashSlots) != 256 {
		t.Fatalf("routes: revision %d, %d slots", table.Revision, len(table.HashSlots))
	}
	slotsOf := map[int64][]int{}
	for i, r := range table.HashSlots {
		if r.HashSlot != i || r.Group < 1 || r.Group > 4 || r.LeaderNode == nil || *r.LeaderNode != self {
			t.Fatalf("route of slot %d: %+v", i, r)
		}
		slotsOf[r.Group] = append(slotsOf[r.Group], r.HashSlot)
	}

	keys := []string{"ada", "app/conf", "g1"}
	res, err := c.ResolveRoutesWithResponse(ctx, client.ResolveRequest{Keys: keys})
	genCheck(t, "resolve", res, err, http.StatusOK)
	if res.JSON200.Revision != table.Revision || len(res.JSON200.Routes) != len(keys) {
		t.Fatalf("resolved: %+v", res.JSON200)
	}
	for i, r := range res.JSON200.Routes {
		hs := genHashSlot(keys[i])
		if r.Key != keys[i] || r.HashSlot != hs || r.Group != table.HashSlots[hs].Group || !r.Ready || r.Error != nil || r.LeaderNode == nil || *r.LeaderNode != self {
			t.Fatalf("resolved %q: %+v (slot %d: %+v)", keys[i], r, hs, table.HashSlots[hs])
		}
	}

	// Groups: intent and observed fact (the test observes; the one node
	// reports 0.2, which the observation records as the cluster version).
	cn.Testing().Leader().ObserveOnce(ctx)
	if after, err := c.GetClusterWithResponse(ctx); err != nil || after.JSON200 == nil || after.JSON200.ClusterVersion == nil || *after.JSON200.ClusterVersion != "0.2" {
		t.Fatalf("the cluster version after an observation: %v %+v", err, after)
	}
	if ns, err := c.ListNodesWithResponse(ctx); err != nil || ns.JSON200 == nil || ns.JSON200.Items[0].Version == nil || *ns.JSON200.Items[0].Version != "0.2" {
		t.Fatalf("the node's version after an observation: %v %+v", err, ns)
	}
	groups, err := c.ListGroupsWithResponse(ctx)
	genCheck(t, "groups", groups, err, http.StatusOK)
	if len(groups.JSON200.Items) != 4 {
		t.Fatalf("groups: %+v", groups.JSON200)
	}
	for i, g := range groups.JSON200.Items {
		if g.Id != int32(i+1) || g.HashSlots != len(slotsOf[int64(g.Id)]) || g.Leader != self || !slices.Equal(g.Voters, []int64{self}) ||
			g.DesiredPeers == nil || len(*g.DesiredPeers) != 1 || (*g.DesiredPeers)[0].Node != self {
			t.Fatalf("group %d: %+v", i+1, g)
		}
	}
	g1, err := c.GetGroupWithResponse(ctx, 1)
	genCheck(t, "group 1", g1, err, http.StatusOK)
	if g := g1.JSON200; g.Id != 1 || g.ConfigEpoch != groups.JSON200.Items[0].ConfigEpoch || g.Leader != self {
		t.Fatalf("group 1: %+v", g)
	}
	nog, err := c.GetGroupWithResponse(ctx, 99)
	genCheck(t, "a missing group", nog, err, http.StatusNotFound)
	genCheckErr(t, "a missing group", nog.JSON404, client.ErrorCodeNotFound)

	// Leader transfer to the leader itself: the preflight says why not,
	// and the transfer is refused with the same blocker.
	pre, err := c.PreflightLeaderTransferWithResponse(ctx, 1, &client.PreflightLeaderTransferParams{TargetNode: self})
	genCheck(t, "preflight", pre, err, http.StatusOK)
	if p := pre.JSON200; p.Ok || p.Group != 1 || p.TargetNode != self || p.Leader != self || !slices.ContainsFunc(p.Blockers, func(b client.Blocker) bool { return b.Reason == "already_leader" }) {
		t.Fatalf("preflight: %+v", p)
	}
	tr, err := c.TransferLeaderWithResponse(ctx, 1, client.LeaderTransferRequest{TargetNode: self})
	genCheck(t, "transfer to the leader", tr, err, http.StatusConflict)
	genCheckErr(t, "transfer to the leader", tr.JSON409, client.ErrorCodeConflict)
	if d := tr.JSON409.Error.Details; d == nil || !slices.ContainsFunc(*d, func(f client.FieldError) bool { return f.Field == "already_leader" }) {
		t.Fatalf("transfer blockers: %+v", tr.JSON409.Error)
	}

	pl, err := c.SetPreferredLeaderWithResponse(ctx, 2, client.PreferredLeaderRequest{Node: self})
	genCheck(t, "preferred leader", pl, err, http.StatusOK)
	if g := pl.JSON200; g.Id != 2 || g.PreferredLeader != self || g.PreferredSetAtMs == 0 {
		t.Fatalf("preferred leader: %+v", g)
	}
	g2, err := c.GetGroupWithResponse(ctx, 2)
	genCheck(t, "group 2", g2, err, http.StatusOK)
	if g2.JSON200.PreferredLeader != self || g2.JSON200.PreferredSetAtMs != pl.JSON200.PreferredSetAtMs {
		t.Fatalf("group 2 after setting its preferred leader: %+v", g2.JSON200)
	}
	notPeer, err := c.SetPreferredLeaderWithResponse(ctx, 2, client.PreferredLeaderRequest{Node: self + 1})
	genCheck(t, "preferred leader not a peer", notPeer, err, http.StatusConflict)

	// A replica move needs another active node.
	mv, err := c.CreateReplicaMoveWithResponse(ctx, 1, client.ReplicaMoveRequest{FromNode: self, ToNode: self + 1})
	genCheck(t, "replica move to no node", mv, err, http.StatusConflict)
	genCheckErr(t, "replica move to no node", mv.JSON409, client.ErrorCodeConflict)

	// Hash-slot migration tasks: one cancelled, one carried out.
	slot := slotsOf[1][0]
	step := func(id int64) client.Task {
		t.Helper()
		cn.Testing().Leader().TasksOnce(ctx)
		r, err := c.GetTaskWithResponse(ctx, id)
		genCheck(t, "task", r, err, http.StatusOK)
		return *r.JSON200
	}
	mig, err := c.CreateSlotMigrationWithResponse(ctx, slot, client.SlotMigrationRequest{ToGroup: 2})
	genCheck(t, "slot migration", mig, err, http.StatusAccepted)
	task := mig.JSON202
	if task.Kind != client.TaskKindSlotMigration || task.Group != 1 || task.ToGroup == nil || *task.ToGroup != 2 || task.HashSlot == nil ||
		*task.HashSlot != slot || task.Status != client.TaskStatusRunning || task.Phase != client.TaskPhaseTrack || task.Id == 0 {
		t.Fatalf("slot migration task: %+v", task)
	}
	if h := mig.Headers202; h == nil || h.Location == nil || *h.Location != "/v1/cluster/tasks/"+strconv.FormatInt(task.Id, 10) {
		t.Fatalf("slot migration headers: %+v", mig.Headers202)
	}
	busy, err := c.CreateSlotMigrationWithResponse(ctx, slotsOf[1][1], client.SlotMigrationRequest{ToGroup: 3})
	genCheck(t, "a second task on the group", busy, err, http.StatusConflict)
	genCheckErr(t, "a second task on the group", busy.JSON409, client.ErrorCodeConflict)
	cancel, err := c.CancelTaskWithResponse(ctx, task.Id)
	genCheck(t, "cancel", cancel, err, http.StatusOK)
	if cancel.JSON200.Id != task.Id || cancel.JSON200.Status != client.TaskStatusCancelling {
		t.Fatalf("cancelled: %+v", cancel.JSON200)
	}
	if got := step(task.Id); got.Status != client.TaskStatusCancelled {
		t.Fatalf("after a step of a cancelling task: %+v", got)
	}

	mig2, err := c.CreateSlotMigrationWithResponse(ctx, slot, client.SlotMigrationRequest{ToGroup: 2})
	genCheck(t, "slot migration again", mig2, err, http.StatusAccepted)
	id2 := mig2.JSON202.Id
	if id2 == task.Id {
		t.Fatalf("the second migration reuses task %d", id2)
	}
	var last client.Task
	for range 20 {
		if last = step(id2); last.Status != client.TaskStatusRunning {
			break
		}
	}
	if last.Status != client.TaskStatusSucceeded || last.Phase != client.TaskPhaseDone || last.History == nil || len(*last.History) == 0 {
		t.Fatalf("slot migration ended %+v", last)
	}
	late, err := c.CancelTaskWithResponse(ctx, id2)
	genCheck(t, "cancel a finished task", late, err, http.StatusConflict)
	genCheckErr(t, "cancel a finished task", late.JSON409, client.ErrorCodeConflict)
	nt, err := c.GetTaskWithResponse(ctx, 999)
	genCheck(t, "a missing task", nt, err, http.StatusNotFound)

	// The routing table moved the slot, under a new revision.
	after, err := c.GetRoutesWithResponse(ctx)
	genCheck(t, "routes after the migration", after, err, http.StatusOK)
	if after.JSON200.Revision != table.Revision+1 || after.JSON200.HashSlots[slot].Group != 2 {
		t.Fatalf("after the migration: revision %d, slot %d in group %d", after.JSON200.Revision, slot, after.JSON200.HashSlots[slot].Group)
	}

	tasks, err := c.ListTasksWithResponse(ctx)
	genCheck(t, "tasks", tasks, err, http.StatusOK)
	var listed []int64
	for _, tk := range tasks.JSON200.Items {
		listed = append(listed, tk.Id)
	}
	if !slices.Equal(listed, []int64{id2, task.Id}) || tasks.JSON200.Items[0].Status != client.TaskStatusSucceeded || tasks.JSON200.Items[1].Status != client.TaskStatusCancelled {
		t.Fatalf("tasks %v: %+v", listed, tasks.JSON200.Items)
	}

	// Each task step is in the decision log, newest first.
	dec, err := c.ListDecisionsWithResponse(ctx, nil)
	genCheck(t, "decisions", dec, err, http.StatusOK)
	items := dec.JSON200.Items
	two, err := c.ListDecisionsWithResponse(ctx, &client.ListDecisionsParams{Limit: ptr(2)})
	genCheck(t, "two decisions", two, err, http.StatusOK)
	if len(items) >= 2 && (len(two.JSON200.Items) != 2 || !reflect.DeepEqual(two.JSON200.Items[0], items[0])) {
		t.Fatalf("limit=2: %+v, want the newest two of %d", two.JSON200.Items, len(items))
	}
	if len(items) == 0 || items[0].Kind != client.DecisionKindTask || items[0].Group != 1 || items[0].AtMs == 0 {
		t.Fatalf("decisions: %+v", items)
	}
	for i := 1; i < len(items); i++ {
		if items[i].AtMs > items[i-1].AtMs {
			t.Fatalf("decisions not newest first: %+v", items)
		}
	}

	// A group created at runtime (its task cancelled before it ran: the
	// group is retired again), and retirement's refusals.
	bad, err := c.CreateGroupWithResponse(ctx, client.CreateGroupRequest{Peers: &[]int64{int64(self), int64(self)}})
	genCheck(t, "create a group on one node twice", bad, err, http.StatusBadRequest)
	cg, err := c.CreateGroupWithResponse(ctx, client.CreateGroupRequest{})
	genCheck(t, "create a group", cg, err, http.StatusAccepted)
	gt := cg.JSON202
	if gt.Kind != client.TaskKindGroupCreate || gt.Group <= 3 || gt.Phase != client.TaskPhaseStart || gt.Status != client.TaskStatusRunning {
		t.Fatalf("group creation task: %+v", gt)
	}
	if h := cg.Headers202; h == nil || h.Location == nil || *h.Location != "/v1/cluster/tasks/"+strconv.FormatInt(gt.Id, 10) {
		t.Fatalf("group creation headers: %+v", cg.Headers202)
	}
	owns, err := c.RetireGroupWithResponse(ctx, 1)
	genCheck(t, "retire a group that owns slots", owns, err, http.StatusConflict)
	genCheckErr(t, "retire a group that owns slots", owns.JSON409, client.ErrorCodeConflict)
	none, err := c.RetireGroupWithResponse(ctx, 99)
	genCheck(t, "retire a group that never was", none, err, http.StatusNotFound)
	genCheckErr(t, "retire a group that never was", none.JSON404, client.ErrorCodeNotFound)
	cc, err := c.CancelTaskWithResponse(ctx, gt.Id)
	genCheck(t, "cancel the group creation", cc, err, http.StatusOK)
	if got := step(gt.Id); got.Status != client.TaskStatusCancelled {
		t.Fatalf("after a step of the cancelled group creation: %+v", got)
	}
	again, err := c.RetireGroupWithResponse(ctx, client.GroupID(gt.Group))
	genCheck(t, "retire a retired group", again, err, http.StatusNoContent)
	gone, err := c.GetGroupWithResponse(ctx, client.GroupID(gt.Group))
	genCheck(t, "a retired group", gone, err, http.StatusNotFound)

	// Splits and merges: refused ones, and one of each cancelled before
	// its first slot moved.
	nosuch, err := c.SplitGroupWithResponse(ctx, 99, client.SplitRequest{})
	genCheck(t, "split a group that does not exist", nosuch, err, http.StatusNotFound)
	self2, err := c.MergeGroupWithResponse(ctx, 2, client.MergeRequest{Into: 2})
	genCheck(t, "merge a group into itself", self2, err, http.StatusBadRequest)
	sp, err := c.SplitGroupWithResponse(ctx, 1, client.SplitRequest{HashSlots: &[]int{int(slotsOf[1][1])}})
	genCheck(t, "split", sp, err, http.StatusAccepted)
	if st := sp.JSON202; st.Kind != client.TaskKindGroupSplit || st.Group != 1 || st.ToGroup == nil || st.HashSlot == nil ||
		*st.HashSlot != slotsOf[1][1] || st.Phase != client.TaskPhaseStart {
		t.Fatalf("split task: %+v", st)
	}
	if _, err := c.CancelTaskWithResponse(ctx, sp.JSON202.Id); err != nil {
		t.Fatal(err)
	}
	if got := step(sp.JSON202.Id); got.Status != client.TaskStatusCancelled {
		t.Fatalf("after a step of the cancelled split: %+v", got)
	}
	mg, err := c.MergeGroupWithResponse(ctx, 3, client.MergeRequest{Into: 2})
	genCheck(t, "merge", mg, err, http.StatusAccepted)
	if mt := mg.JSON202; mt.Kind != client.TaskKindGroupMerge || mt.Group != 3 || mt.ToGroup == nil || *mt.ToGroup != 2 || mt.Phase != client.TaskPhaseTrack {
		t.Fatalf("merge task: %+v", mt)
	}
	if _, err := c.CancelTaskWithResponse(ctx, mg.JSON202.Id); err != nil {
		t.Fatal(err)
	}
	if got := step(mg.JSON202.Id); got.Status != client.TaskStatusCancelled {
		t.Fatalf("after a step of the cancelled merge: %+v", got)
	}

	// The balancer: its state, a dry-run plan, pause and resume; a node's
	// drain and removal, both refused on a one-node cluster.
	bal, err := c.GetBalancerWithResponse(ctx)
	genCheck(t, "balancer", bal, err, http.StatusOK)
	if b := bal.JSON200; b.Paused || len(b.Load) != 1 || b.Load[0].Node != self || b.Load[0].Replicas < 1 {
		t.Fatalf("balancer: %+v", b)
	}
	plan, err := c.GetBalancerPlanWithResponse(ctx)
	genCheck(t, "balancer plan", plan, err, http.StatusOK)
	yes, no := true, false
	paused, err := c.SetBalancerWithResponse(ctx, client.BalancerRequest{Paused: &yes})
	genCheck(t, "pause the balancer", paused, err, http.StatusOK)
	if !paused.JSON200.Paused || paused.JSON200.ChangedAtMs == nil {
		t.Fatalf("paused: %+v", paused.JSON200)
	}
	resumed, err := c.SetBalancerWithResponse(ctx, client.BalancerRequest{Paused: &no})
	genCheck(t, "resume the balancer", resumed, err, http.StatusOK)
	// The preferred leader, split and merge made by hand above pinned their
	// groups; released.
	var pinned []int64
	for _, p := range resumed.JSON200.Pins {
		if p.UntilMs <= p.AtMs || !p.Why.Valid() {
			t.Fatalf("pin %+v", p)
		}
		pinned = append(pinned, p.Group)
	}
	if len(pinned) == 0 {
		t.Fatalf("no pins after manual actions: %+v", resumed.JSON200)
	}
	released, err := c.SetBalancerWithResponse(ctx, client.BalancerRequest{ReleasePins: &pinned})
	genCheck(t, "release a pin", released, err, http.StatusOK)
	if len(released.JSON200.Pins) != 0 || released.JSON200.Paused {
		t.Fatalf("after the release: %+v", released.JSON200)
	}
	drain, err := c.DrainNodeWithResponse(ctx, self)
	genCheck(t, "drain the only node", drain, err, http.StatusPreconditionFailed)
	genCheckErr(t, "drain the only node", drain.JSON412, client.ErrorCodeFailedPrecondition)
	genBackups(t, c)
	genRecovery(t, c)

	drain, err = c.DrainNodeWithResponse(ctx, 99)
	genCheck(t, "drain an unknown node", drain, err, http.StatusNotFound)
	rm, err := c.RemoveNodeWithResponse(ctx, self)
	genCheck(t, "remove a node with replicas", rm, err, http.StatusPreconditionFailed)
	genCheckErr(t, "remove a node with replicas", rm.JSON412, client.ErrorCodeFailedPrecondition)
	rm, err = c.RemoveNodeWithResponse(ctx, 99)
	genCheck(t, "remove an unknown node", rm, err, http.StatusNotFound)

	// The audit trail holds every admin action above, newest first: the
	// last is the refused removal of node 99; paging continues below it.
	// The trail is read from this node's controller replica (one node:
	// applied when the record's proposal returned).
	au, err := c.ListAuditWithResponse(ctx, &client.ListAuditParams{Limit: ptr(2)})
	genCheck(t, "audit", au, err, http.StatusOK)
	page := au.JSON200
	if len(page.Items) != 2 || page.Items[0].Action != "DELETE /v1/cluster/nodes/{id}" || page.Items[0].Target != "/v1/cluster/nodes/99" ||
		page.Items[0].Outcome != "refused" || page.Items[0].Status != 404 || page.Items[0].Via != client.AuditRecordViaOpen ||
		page.Items[1].Seq >= page.Items[0].Seq || page.NextBefore == nil || page.Newest != page.Items[0].Seq {
		t.Fatalf("audit page: %+v", page)
	}
	au, err = c.ListAuditWithResponse(ctx, &client.ListAuditParams{Before: page.NextBefore, Limit: ptr(1000)})
	genCheck(t, "audit, next page", au, err, http.StatusOK)
	var actions []string
	for _, r := range au.JSON200.Items {
		actions = append(actions, r.Action)
	}
	for _, want := range []string{"POST /v1/cluster/backups", "POST /v1/cluster/hash-slots/{slot}/migrations", "POST /v1/cluster/groups", "PUT /v1/cluster/balancer",
		"POST /v1/cluster/nodes/{id}/drain", "POST /v1/cluster/tasks/{id}/cancel"} {
		if !slices.Contains(actions, want) {
			t.Fatalf("the audit trail lacks %q: %v", want, actions)
		}
	}
	sec, err := c.GetSecurityWithResponse(ctx)
	genCheck(t, "security", sec, err, http.StatusOK)
	if s := sec.JSON200; s.Insecure || s.ApiTls || s.ClusterTls || s.Tokens != 0 || s.AuditLost != 0 {
		t.Fatalf("security of an open loopback node: %+v", s)
	}
}
