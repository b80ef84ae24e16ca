package contract

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestContractWalkUsersChannels walks devices, system UIDs, plugin
// bindings, channels and their lists on a real node, through the checking
// client: every answer must be what openapi.yaml says,
// and the requests marked refused must be refused by the spec too.
func TestContractWalkUsersChannels(t *testing.T) {
	n := startNode(t)
	n.do(201, req{method: "POST", path: "/v1/users", body: `{"uid":"ada"}`})

	// Devices.
	n.do(404, req{method: "PUT", path: "/v1/users/nobody/devices/1", body: `{"token":"t"}`})
	n.do(200, req{method: "PUT", path: "/v1/users/ada/devices/1", body: `{"token":"t1","device_level":1}`,
		headers: []string{"Idempotency-Key", "dev-1"}})
	if r := n.do(200, req{method: "PUT", path: "/v1/users/ada/devices/1", body: `{"token":"t1","device_level":1}`,
		headers: []string{"Idempotency-Key", "dev-1"}}); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replayed device put: %v", r.header)
	}
	n.do(200, req{method: "PUT", path: "/v1/users/ada/devices/0", body: `{"token":"t0"}`})
	n.do(200, req{method: "GET", path: "/v1/users/ada/devices/1"})
	n.do(200, req{method: "HEAD", path: "/v1/users/ada/devices/1"})
	n.do(404, req{method: "GET", path: "/v1/users/ada/devices/2"})
	walkPages(t, n, "/v1/users/ada/devices", 2)
	n.do(404, req{method: "GET", path: "/v1/users/nobody/devices"})
	n.do(400, req{method: "PUT", path: "/v1/users/ada/devices/256", body: `{"token":"t"}`, refused: true})
	n.do(400, req{method: "PUT", path: "/v1/users/ada/devices/1", body: `{"token":"t","device_level":256}`, refused: true})
	n.do(400, req{method: "PUT", path: "/v1/users/ada/devices/1", body: `{"device_level":1}`, refused: true})
	n.do(400, req{method: "PUT", path: "/v1/users/ada/devices/1", body: `{"token":"t","x":1}`, refused: true})
	n.do(400, req{method: "GET", path: "/v1/users/ada/devices?limit=0", refused: true})
	n.do(400, req{method: "GET", path: "/v1/users/ada/devices/01"}) // the spec cannot say "no leading zeros"
	n.do(204, req{method: "DELETE", path: "/v1/users/ada/devices/0"})
	n.do(404, req{method: "DELETE", path: "/v1/users/ada/devices/0"})

	// System UIDs.
	n.do(200, req{method: "PUT", path: "/v1/system-uids/bot-1"})
	n.do(200, req{method: "PUT", path: "/v1/system-uids/bot-1", headers: []string{"Idempotency-Key", "sys-1"}})
	n.do(200, req{method: "PUT", path: "/v1/system-uids/bot-2"})
	n.do(200, req{method: "PUT", path: "/v1/system-uids/bot-3"})
	walkPages(t, n, "/v1/system-uids", 2)
	n.do(200, req{method: "GET", path: "/v1/system-uids?consistency=local"})
	n.do(204, req{method: "DELETE", path: "/v1/system-uids/bot-1"})
	n.do(404, req{method: "DELETE", path: "/v1/system-uids/bot-1"})
	n.do(400, req{method: "GET", path: "/v1/system-uids?limit=1001", refused: true})
	n.do(400, req{method: "PUT", path: "/v1/system-uids/" + strings.Repeat("u", 129), refused: true})

	// Plugin bindings.
	n.do(200, req{method: "PUT", path: "/v1/users/ada/plugins/p1"})
	n.do(200, req{method: "PUT", path: "/v1/users/ada/plugins/p1", body: `{"config":{"url":"https://example.org/hook"}}`})
	n.do(200, req{method: "PUT", path: "/v1/users/ada/plugins/p2", body: `{"config":null}`})
	n.do(404, req{method: "PUT", path: "/v1/users/nobody/plugins/p1"})
	for i := range 5 {
		uid := fmt.Sprintf("pu-%d", i)
		n.do(201, req{method: "POST", path: "/v1/users", body: fmt.Sprintf(`{"uid":%q}`, uid)})
		n.do(200, req{method: "PUT", path: "/v1/users/" + uid + "/plugins/p1", body: `{"config":[1]}`})
	}
	walkPages(t, n, "/v1/users/ada/plugins", 1)
	walkPages(t, n, "/v1/plugins/p1/users", 2)
	n.do(400, req{method: "PUT", path: "/v1/users/ada/plugins/a:b", refused: true})
	n.do(400, req{method: "PUT", path: "/v1/users/ada/plugins/p1", body: `{"cfg":1}`, refused: true})
	n.do(400, req{method: "GET", path: "/v1/plugins/" + strings.Repeat("p", 65) + "/users", refused: true})
	n.do(204, req{method: "DELETE", path: "/v1/users/ada/plugins/p2"})
	n.do(404, req{method: "DELETE", path: "/v1/users/ada/plugins/p2"})

	// Channels.
	n.do(201, req{method: "POST", path: "/v1/channels", body: `{"channel_id":"g1","channel_type":2,"ban":true,"extra":{"k":"v"}}`,
		headers: []string{"Idempotency-Key", "ch-1"}})
	n.do(201, req{method: "POST", path: "/v1/channels", body: `{"channel_id":"g1","channel_type":2,"ban":true,"extra":{"k":"v"}}`,
		headers: []string{"Idempotency-Key", "ch-1"}})
	if r := n.do(409, req{method: "POST", path: "/v1/channels", body: `{"channel_id":"g1","channel_type":2}`}); r.errCode() != "conflict" {
		t.Fatalf("second create: %s", r.body)
	}
	n.do(200, req{method: "PUT", path: "/v1/channels/2/g1", body: `{"large":true,"send_ban":true,"allow_stranger":true,"disband":false}`})
	n.do(200, req{method: "PUT", path: "/v1/channels/3/g1", body: `{"channel_id":"g1","channel_type":3}`})
	n.do(200, req{method: "GET", path: "/v1/channels/2/g1"})
	n.do(404, req{method: "GET", path: "/v1/channels/9/g1"})
	n.do(400, req{method: "PUT", path: "/v1/channels/2/g1", body: `{"channel_id":"other"}`}) // the spec cannot say "equal to the path's"
	n.do(400, req{method: "POST", path: "/v1/channels", body: `{"channel_id":"g","channel_type":0}`, refused: true})
	n.do(400, req{method: "POST", path: "/v1/channels", body: `{"channel_type":1}`, refused: true})
	n.do(400, req{method: "POST", path: "/v1/channels", body: `{"channel_id":"g","channel_type":1,"ban":"yes"}`, refused: true})
	n.do(400, req{method: "GET", path: "/v1/channels/256/g1", refused: true})

	// Lists.
	for _, l := range []string{"subscribers", "denylist", "allowlist"} {
		base := "/v1/channels/2/g1/" + l
		n.do(200, req{method: "POST", path: base, body: `{"uids":["a","b","a","c"]}`, headers: []string{"Idempotency-Key", "add-" + l}})
		n.do(200, req{method: "POST", path: base + "/remove", body: `{"uids":["a","zz"]}`})
		n.do(200, req{method: "GET", path: base + "/b"})
		n.do(404, req{method: "GET", path: base + "/a"})
		walkPages(t, n, base, 1)
		n.do(204, req{method: "DELETE", path: base + "/b"})
		n.do(404, req{method: "DELETE", path: base + "/b"})
		n.do(404, req{method: "POST", path: "/v1/channels/7/nowhere/" + l, body: `{"uids":["a"]}`})
		n.do(404, req{method: "GET", path: "/v1/channels/7/nowhere/" + l})
		n.do(400, req{method: "POST", path: base, body: `{"uids":[]}`, refused: true})
		n.do(400, req{method: "POST", path: base + "/remove", body: `{"uid":"a"}`, refused: true})
	}
	n.do(200, req{method: "GET", path: "/v1/channels/2/g1"})
	n.do(204, req{method: "DELETE", path: "/v1/channels/2/g1"})
	n.do(404, req{method: "DELETE", path: "/v1/channels/2/g1"})

	// Deleting a user deletes its devices and bindings.
	n.do(204, req{method: "DELETE", path: "/v1/users/ada"})
	n.do(404, req{method: "GET", path: "/v1/users/ada/plugins"})
}

// walkPages lists path with limit until next_cursor is absent.
func walkPages(t *testing.T, n *node, path string, limit int) {
	t.Helper()
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("%s: listing does not end", path)
		}
		var page struct {
			NextCursor string `json:"next_cursor"`
		}
		n.do(200, req{method: "GET", path: fmt.Sprintf("%s?limit=%d&cursor=%s", path, limit, url.QueryEscape(cursor))}).decode(t, &page)
		if cursor = page.NextCursor; cursor == "" {
			return
		}
	}
}
