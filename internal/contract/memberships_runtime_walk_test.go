package contract

import (
	"net/url"
	"strings"
	"testing"
)

// TestContractWalkMembershipsRuntime walks memberships, CMD bindings,
// channel runtime meta, migration tasks and message events on a real node:
// every memberships and runtime operation of openapi.yaml, with its
// success answers and its error answers, each checked against the spec.
func TestContractWalkMembershipsRuntime(t *testing.T) {
	n := startNode(t)
	page := func(path string) string {
		var p struct {
			NextCursor string `json:"next_cursor"`
		}
		n.do(200, req{method: "GET", path: path}).decode(t, &p)
		return p.NextCursor
	}

	// Memberships.
	const m = "/v1/users/ada/memberships"
	n.do(200, req{method: "PUT", path: m + "/2/g1", body: `{"join_seq":1,"read_seq":2,"deleted_to_seq":0,"activated_at_ms":5,"tombstone":false}`,
		headers: []string{"Idempotency-Key", "m-put"}})
	n.do(200, req{method: "PUT", path: m + "/2/g1", body: `{"join_seq":1,"read_seq":2,"deleted_to_seq":0,"activated_at_ms":5,"tombstone":false}`,
		headers: []string{"Idempotency-Key", "m-put"}})
	n.do(200, req{method: "PUT", path: m + "/1/g0", body: `{}`})
	n.do(200, req{method: "PUT", path: m + "/3/gone", body: `{"tombstone":true}`})
	n.do(200, req{method: "GET", path: m + "/2/g1"})
	n.do(200, req{method: "GET", path: m + "/3/gone?consistency=local"})
	n.do(200, req{method: "POST", path: m + "/2/g1/read", body: `{"read_seq":9}`})
	n.do(200, req{method: "POST", path: m + "/2/g1/read", body: `{"read_seq":1}`})
	n.do(200, req{method: "POST", path: m + "/2/g1/hide", body: `{"to_seq":3}`})
	n.do(200, req{method: "POST", path: m + "/2/g1/activate"})
	if c := page(m + "?limit=1"); c == "" {
		t.Fatal("no cursor after a page of one of two")
	} else {
		n.do(200, req{method: "GET", path: m + "?limit=1&cursor=" + url.QueryEscape(c)})
	}
	n.do(404, req{method: "GET", path: m + "/2/none"})
	n.do(404, req{method: "POST", path: m + "/2/none/read", body: `{"read_seq":1}`})
	n.do(404, req{method: "POST", path: m + "/2/none/activate"})
	n.do(400, req{method: "POST", path: m + "/2/g1/read", body: `{}`, refused: true})
	n.do(400, req{method: "POST", path: m + "/2/g1/hide", body: `{"to_seq":-1}`, refused: true})
	n.do(400, req{method: "PUT", path: m + "/0/g1", body: `{}`, refused: true})
	n.do(400, req{method: "PUT", path: m + "/2/g1", body: `{"x":1}`, refused: true})
	n.do(400, req{method: "GET", path: m + "?limit=1001", refused: true})
	n.do(400, req{method: "GET", path: m + "/2/a%20b", refused: true}) // the spec's pattern refuses whitespace too
	n.do(409, req{method: "GET", path: m + "/2/g1", headers: []string{"X-Route-Revision", "0"}})
	n.do(204, req{method: "DELETE", path: m + "/3/gone"})
	n.do(404, req{method: "DELETE", path: m + "/3/gone"})

	// CMD bindings.
	const cb = "/v1/users/ada/cmd-bindings"
	n.do(200, req{method: "PUT", path: cb + "/1/c1", body: `{"start_seq":4}`})
	n.do(200, req{method: "PUT", path: cb + "/1/c2", body: `{"start_seq":0}`})
	n.do(200, req{method: "POST", path: cb + "/1/c1/ack", body: `{"ack_seq":6}`})
	n.do(200, req{method: "GET", path: cb + "/1/c1"})
	n.do(200, req{method: "GET", path: cb + "?limit=1&cursor=" + url.QueryEscape(page(cb+"?limit=1"))})
	n.do(404, req{method: "POST", path: cb + "/1/none/ack", body: `{"ack_seq":1}`})
	n.do(400, req{method: "PUT", path: cb + "/1/c1", body: `{}`, refused: true})
	n.do(204, req{method: "DELETE", path: cb + "/1/c2"})
	n.do(404, req{method: "GET", path: cb + "/1/c2"})

	// Runtime meta.
	const rt = "/v1/channels/2/room/runtime"
	body := `{"channel_epoch":2,"leader_epoch":1,"leader":1,"replicas":[1,2],"isr":[1],"min_isr":1,"status":"active",` +
		`"lease_until_ms":100,"retention_through_seq":0,"write_fence":{"token":"t","version":1,"reason":"r","until_ms":5}}`
	n.do(404, req{method: "GET", path: rt})
	n.do(201, req{method: "POST", path: rt, body: body})
	n.do(409, req{method: "POST", path: rt, body: body})
	n.do(200, req{method: "GET", path: rt})
	n.do(200, req{method: "PUT", path: rt, body: strings.Replace(body, `"write_fence":{"token":"t","version":1,"reason":"r","until_ms":5}`, `"write_fence":null`, 1)})
	n.do(409, req{method: "PUT", path: rt, body: strings.Replace(body, `"channel_epoch":2`, `"channel_epoch":1`, 1)})
	n.do(409, req{method: "PUT", path: rt, body: strings.Replace(strings.Replace(body, `"leader":1`, `"leader":2`, 1), `"isr":[1]`, `"isr":[2]`, 1)})
	n.do(200, req{method: "POST", path: rt + "/retention", body: `{"expected_channel_epoch":2,"expected_leader":1,"through_seq":10}`})
	n.do(409, req{method: "POST", path: rt + "/retention", body: `{"expected_channel_epoch":3,"expected_leader":1,"through_seq":10}`})
	n.do(400, req{method: "POST", path: rt + "/retention", body: `{"expected_leader":1,"through_seq":10}`, refused: true})
	n.do(400, req{method: "PUT", path: rt, body: `{"channel_epoch":1,"leader_epoch":1,"leader":1,"replicas":[1],"isr":[1],"min_isr":1,"status":"zombie"}`, refused: true})
	n.do(400, req{method: "PUT", path: rt, body: `{"channel_epoch":1,"leader_epoch":1,"leader":3,"replicas":[1],"isr":[1],"min_isr":1}`}) // the spec cannot say "leader ∈ replicas"
	n.do(204, req{method: "DELETE", path: rt})
	n.do(404, req{method: "DELETE", path: rt})
	n.do(404, req{method: "POST", path: rt + "/retention", body: `{"expected_channel_epoch":2,"expected_leader":1,"through_seq":10}`})

	// Migration tasks.
	const mg = "/v1/channels/2/room/migrations"
	n.do(201, req{method: "POST", path: mg, body: `{"kind":"replica_move","source_node":1,"target_node":2}`})
	n.do(409, req{method: "POST", path: mg, body: `{"kind":"leader_transfer","source_node":1,"target_node":2}`})
	n.do(200, req{method: "GET", path: mg + "/1"})
	n.do(200, req{method: "POST", path: mg + "/1/advance", body: `{"expected_phase":"created","phase":"done","note":"fast"}`})
	n.do(409, req{method: "POST", path: mg + "/1/advance", body: `{"expected_phase":"created","phase":"copying"}`})
	n.do(409, req{method: "POST", path: mg + "/1/abort"})
	n.do(201, req{method: "POST", path: mg, body: `{"kind":"leader_transfer","source_node":2,"target_node":1}`})
	n.do(200, req{method: "POST", path: mg + "/2/abort", body: `{"note":"why"}`})
	n.do(200, req{method: "GET", path: mg + "?limit=1&cursor=" + url.QueryEscape(page(mg+"?limit=1"))})
	n.do(404, req{method: "GET", path: mg + "/9"})
	n.do(404, req{method: "POST", path: mg + "/9/abort"})
	n.do(400, req{method: "POST", path: mg, body: `{"kind":"teleport","source_node":1,"target_node":2}`, refused: true})
	n.do(400, req{method: "POST", path: mg + "/2/advance", body: `{"expected_phase":"created","phase":"aborted"}`, refused: true})
	n.do(400, req{method: "GET", path: mg + "/0", refused: true})

	// Events.
	const ev = "/v1/channels/2/room/events"
	n.do(201, req{method: "POST", path: ev, body: `{"client_msg_no":"m","event_key":"k","event_id":"1","event_type":"t","status":"s","payload":{"a":[1]}}`})
	n.do(201, req{method: "POST", path: ev, body: `{"client_msg_no":"m","event_key":"k","event_id":"2","event_type":"t","payload":null}`,
		headers: []string{"Idempotency-Key", "ev-2"}})
	n.do(201, req{method: "POST", path: ev, body: `{"client_msg_no":"m","event_key":"k","event_id":"2","event_type":"t","payload":null}`,
		headers: []string{"Idempotency-Key", "ev-2"}})
	n.do(200, req{method: "GET", path: ev + "?limit=1&cursor=" + url.QueryEscape(page(ev+"?limit=1"))})
	n.do(400, req{method: "POST", path: ev, body: `{"client_msg_no":"m","event_key":"k","event_type":"t"}`, refused: true})
	n.do(400, req{method: "GET", path: ev + "?cursor=AAAA"})
}
