package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestBadInputIsRejectedBeforeTheBackend sends every kind of client mistake
// and checks that each gets a 4xx with the error body, names the offending
// field where there is one, and never reaches the backend at all.
func TestBadInputIsRejectedBeforeTheBackend(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	manyKeys := `{"keys":[` + strings.TrimSuffix(strings.Repeat(`"k",`, 1001), ",") + `]}`
	type tc struct {
		name, method, target, body string
		headers                    []string
		status                     int
		field                      string // a details entry that must be present, if any
	}
	cases := []tc{
		// JSON shape.
		{"truncated JSON", "POST", "/v1/users", `{"uid":`, nil, 400, ""},
		{"syntax error", "POST", "/v1/users", `{uid}`, nil, 400, ""},
		{"empty body", "POST", "/v1/users", ``, []string{"Content-Type", "application/json"}, 400, ""},
		{"whitespace body", "POST", "/v1/users", "  \n ", nil, 400, ""},
		{"array body", "POST", "/v1/users", `[{"uid":"a"}]`, nil, 400, ""},
		{"string body", "POST", "/v1/users", `"a"`, nil, 400, ""},
		{"null body", "POST", "/v1/users", `null`, nil, 400, ""},
		{"two values", "POST", "/v1/users", `{"uid":"a"} {"uid":"b"}`, nil, 400, ""},
		{"trailing garbage", "POST", "/v1/users", `{"uid":"a"}x`, nil, 400, ""},
		{"unknown field", "POST", "/v1/users", `{"uid":"a","nick":"b"}`, nil, 400, "nick"},
		{"field in other case", "POST", "/v1/users", `{"UID":"a"}`, nil, 400, "UID"},
		{"duplicate field", "POST", "/v1/users", `{"uid":"a","uid":"b"}`, nil, 400, "uid"},
		{"uid wrong type", "POST", "/v1/users", `{"uid":1}`, nil, 400, "uid"},
		{"name wrong type", "POST", "/v1/users", `{"uid":"a","name":["x"]}`, nil, 400, "name"},
		{"group id beyond uint32", "POST", "/v1/cluster/groups/1/merge", `{"into":4294967296}`, nil, 400, "into"},
		{"group id fraction", "POST", "/v1/cluster/groups/1/merge", `{"into":1.5}`, nil, 400, "into"},
		{"not JSON content type", "POST", "/v1/users", `{"uid":"a"}`, []string{"Content-Type", "text/plain"}, 400, "Content-Type"},
		{"form content type", "POST", "/v1/users", `{"uid":"a"}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 400, "Content-Type"},
		{"body over the limit", "POST", "/v1/users", `{"uid":"a","extra":"` + long(2<<20) + `"}`, nil, 413, ""},
		// A request struct's embedded fields are its members, named as the
		// client wrote them (channelFlagsJSON's, here).
		{"embedded member wrong type", "POST", "/v1/channels", `{"channel_id":"c","channel_type":1,"ban":"yes"}`, nil, 400, "ban"},
		{"embedded member too long", "PUT", "/v1/channels/1/c", `{"extra":"` + long(64<<10) + `"}`, nil, 400, "extra"},
		{"unknown member beside embedded ones", "POST", "/v1/channels", `{"channel_id":"c","channel_type":1,"mute":true}`, nil, 400, "mute"},
		// uid rules.
		{"uid missing", "POST", "/v1/users", `{"name":"n"}`, nil, 400, "uid"},
		{"uid empty", "POST", "/v1/users", `{"uid":""}`, nil, 400, "uid"},
		{"uid too long", "POST", "/v1/users", `{"uid":"` + long(129) + `"}`, nil, 400, "uid"},
		{"uid with space", "POST", "/v1/users", `{"uid":"a b"}`, nil, 400, "uid"},
		{"uid with slash", "POST", "/v1/users", `{"uid":"a/b"}`, nil, 400, "uid"},
		{"uid with control", "POST", "/v1/users", `{"uid":"a\u0007"}`, nil, 400, "uid"},
		{"uid dot dot", "POST", "/v1/users", `{"uid":".."}`, nil, 400, "uid"},
		{"name too long", "POST", "/v1/users", `{"uid":"a","name":"` + long(1025) + `"}`, nil, 400, "name"},
		{"avatar too long", "POST", "/v1/users", `{"uid":"a","avatar":"` + long(2049) + `"}`, nil, 400, "avatar"},
		{"extra too long", "POST", "/v1/users", `{"uid":"a","extra":"` + long(64<<10) + `"}`, nil, 400, "extra"},
		{"path uid with space", "PUT", "/v1/users/a%20b", `{"name":"n"}`, nil, 400, "uid"},
		{"path uid invalid UTF-8", "GET", "/v1/users/%FF", ``, nil, 400, "uid"},
		{"path uid too long", "DELETE", "/v1/users/" + long(129), ``, nil, 400, "uid"},
		{"body uid differs from path", "PUT", "/v1/users/a", `{"uid":"b"}`, nil, 400, "uid"},
		// Reads.
		{"bad consistency", "GET", "/v1/users/a?consistency=strong", ``, nil, 400, "consistency"},
		{"empty consistency", "GET", "/v1/kv/k?consistency=", ``, nil, 400, "consistency"},
		{"repeated consistency", "GET", "/v1/kv/k?consistency=local&consistency=local", ``, nil, 400, "consistency"},
		{"malformed query", "GET", "/v1/kv/k?consistency=%zz", ``, nil, 400, ""},
		{"query value invalid UTF-8", "GET", "/v1/users?cursor=%FF", ``, nil, 400, "cursor"},
		{"query value lone surrogate", "GET", "/v1/kv/k?consistency=%ED%A0%80", ``, nil, 400, "consistency"},
		// Listing.
		{"limit zero", "GET", "/v1/users?limit=0", ``, nil, 400, "limit"},
		{"limit too big", "GET", "/v1/users?limit=1001", ``, nil, 400, "limit"},
		{"limit negative", "GET", "/v1/users?limit=-1", ``, nil, 400, "limit"},
		{"limit not a number", "GET", "/v1/users?limit=ten", ``, nil, 400, "limit"},
		{"limit empty", "GET", "/v1/users?limit=", ``, nil, 400, "limit"},
		{"cursor not base64", "GET", "/v1/users?cursor=!!!", ``, nil, 400, "cursor"},
		{"cursor too short", "GET", "/v1/users?cursor=AQ", ``, nil, 400, "cursor"},
		{"cursor wrong version", "GET", "/v1/users?cursor=" + encodeBad(2, 0, "a"), ``, nil, 400, "cursor"},
		{"cursor slot out of range", "GET", "/v1/users?cursor=" + encodeBad(1, 256, "a"), ``, nil, 400, "cursor"},
		{"cursor bad uid", "GET", "/v1/users?cursor=" + encodeBad(1, 3, "a b"), ``, nil, 400, "cursor"},
		{"cursor padded", "GET", "/v1/users?cursor=" + encodeCursor(position{slot: 3, after: "ab"}) + "=", ``, nil, 400, "cursor"},
		{"bad consistency on list", "GET", "/v1/users?consistency=eventual", ``, nil, 400, "consistency"},
		// Key listings: bounds, keys_only, a cursor of a key.
		{"kv list end before start", "GET", "/v1/kv?start=b&end=a", ``, nil, 400, "end"},
		{"kv list end equal to start", "GET", "/v1/kv?start=a&end=a", ``, nil, 400, "end"},
		{"kv list prefix with a control character", "GET", "/v1/kv?prefix=a%01", ``, nil, 400, "prefix"},
		{"kv list prefix too long", "GET", "/v1/kv?prefix=" + long(513), ``, nil, 400, "prefix"},
		{"kv list prefix twice", "GET", "/v1/kv?prefix=a&prefix=b", ``, nil, 400, "prefix"},
		{"kv list start not UTF-8", "GET", "/v1/kv?start=%ff", ``, nil, 400, "start"},
		{"kv list keys_only not a boolean", "GET", "/v1/kv?keys_only=maybe", ``, nil, 400, "keys_only"},
		{"kv list cursor bad key", "GET", "/v1/kv?cursor=" + encodeBad(1, 3, "a\x01"), ``, nil, 400, "cursor"},
		{"kv list limit too large", "GET", "/v1/kv?limit=1001", ``, nil, 400, "limit"},
		// Routing and idempotency headers.
		{"route revision not a number", "GET", "/v1/kv/k", ``, []string{"X-Route-Revision", "abc"}, 400, "X-Route-Revision"},
		{"route revision negative", "PUT", "/v1/kv/k", `{"value":"v"}`, []string{"X-Route-Revision", "-1"}, 400, "X-Route-Revision"},
		{"route revision list", "DELETE", "/v1/users/a", ``, []string{"X-Route-Revision", "1, 2"}, 400, "X-Route-Revision"},
		{"idempotency key empty", "PUT", "/v1/kv/k", `{"value":"v"}`, []string{"Idempotency-Key", ""}, 400, "Idempotency-Key"},
		{"idempotency key too long", "POST", "/v1/users", `{"uid":"a"}`, []string{"Idempotency-Key", long(257)}, 400, "Idempotency-Key"},
		{"idempotency key not ASCII", "DELETE", "/v1/kv/k", ``, []string{"Idempotency-Key", "clé"}, 400, "Idempotency-Key"},
		{"idempotency key twice", "DELETE", "/v1/kv/k", ``, []string{"Idempotency-Key", "a", "Idempotency-Key", "b"}, 400, "Idempotency-Key"},
		// Business keys.
		{"kv value missing", "PUT", "/v1/kv/k", `{}`, nil, 400, "value"},
		{"kv value empty", "PUT", "/v1/kv/k", `{"value":""}`, nil, 400, "value"},
		{"kv value too long", "PUT", "/v1/kv/k", `{"value":"` + long(64<<10+1) + `"}`, nil, 400, "value"},
		{"kv value number", "PUT", "/v1/kv/k", `{"value":5}`, nil, 400, "value"},
		{"kv value null", "PUT", "/v1/kv/k", `{"value":null}`, nil, 400, "value"},
		{"kv unknown field", "PUT", "/v1/kv/k", `{"value":"v","ttl":5}`, nil, 400, "ttl"},
		{"kv key too long", "PUT", "/v1/kv/" + long(513), `{"value":"v"}`, nil, 400, "key"},
		{"kv key dot dot", "GET", "/v1/kv/%2E%2E", ``, nil, 400, "key"},
		{"kv key control", "GET", "/v1/kv/a%00b", ``, nil, 400, "key"},
		{"if-match unquoted", "PUT", "/v1/kv/k", `{"value":"v"}`, []string{"If-Match", "5"}, 400, "If-Match"},
		{"if-match weak", "PUT", "/v1/kv/k", `{"value":"v"}`, []string{"If-Match", `W/"5"`}, 400, "If-Match"},
		{"if-match zero", "PUT", "/v1/kv/k", `{"value":"v"}`, []string{"If-Match", `"0"`}, 400, "If-Match"},
		{"if-match not a number", "DELETE", "/v1/kv/k", ``, []string{"If-Match", `"abc"`}, 400, "If-Match"},
		{"if-match list", "PUT", "/v1/kv/k", `{"value":"v"}`, []string{"If-Match", `"1", "2"`}, 400, "If-Match"},
		{"if-match empty tag", "PUT", "/v1/kv/k", `{"value":"v"}`, []string{"If-Match", `""`}, 400, "If-Match"},
		{"if-none-match tag", "PUT", "/v1/kv/k", `{"value":"v"}`, []string{"If-None-Match", `"5"`}, 400, "If-None-Match"},
		{"if-none-match on delete", "DELETE", "/v1/kv/k", ``, []string{"If-None-Match", `*`}, 400, "If-None-Match"},
		{"both preconditions", "PUT", "/v1/kv/k", `{"value":"v"}`, []string{"If-Match", `*`, "If-None-Match", `*`}, 400, ""},
		// Resolve.
		{"resolve without keys", "POST", "/v1/cluster/routes/resolve", `{}`, nil, 400, "keys"},
		{"resolve empty keys", "POST", "/v1/cluster/routes/resolve", `{"keys":[]}`, nil, 400, "keys"},
		{"resolve too many keys", "POST", "/v1/cluster/routes/resolve", manyKeys, nil, 400, "keys"},
		{"resolve empty key", "POST", "/v1/cluster/routes/resolve", `{"keys":["a",""]}`, nil, 400, "keys[1]"},
		{"resolve key too long", "POST", "/v1/cluster/routes/resolve", `{"keys":["` + long(513) + `"]}`, nil, 400, "keys[0]"},
		{"resolve key wrong type", "POST", "/v1/cluster/routes/resolve", `{"keys":["a",1]}`, nil, 400, "keys"},
		{"resolve keys not a list", "POST", "/v1/cluster/routes/resolve", `{"keys":"a"}`, nil, 400, "keys"},
		// Routing.
		{"unknown path", "GET", "/v2/users", ``, nil, 404, ""},
		{"key with a slash", "GET", "/v1/kv/a/b", ``, nil, 404, ""},
		{"method not allowed", "PATCH", "/v1/kv/k", `{"value":"v"}`, nil, 405, ""},
		{"unknown method", "BREW", "/v1/kv/k", ``, nil, 405, ""},
		{"unknown method, unknown path", "BREW", "/v1/nothing", ``, nil, 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, 4)
			w := do(t, newHandler(t, f), c.method, c.target, c.body, c.headers...)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			e := decodeError(t, w)
			wantCode := map[int]slotstore.Code{400: slotstore.CodeInvalidArgument, 404: slotstore.CodeNotFound,
				405: slotstore.CodeInvalidArgument, 413: slotstore.CodePayloadTooLarge}[c.status]
			if e.Code != wantCode {
				t.Fatalf("code %s, want %s", e.Code, wantCode)
			}
			if strings.Contains(e.Message+fmt.Sprint(e.Details), "an integer, not a number") {
				t.Fatalf("an integer's refusal must give its range, not call it a number: %q %+v", e.Message, e.Details)
			}
			if c.field != "" && !hasField(e.Details, c.field) {
				t.Fatalf("details %+v lack field %q (message %q)", e.Details, c.field, e.Message)
			}
			if calls := f.Calls(); len(calls) != 0 {
				t.Fatalf("a rejected request reached the backend: %v", calls)
			}
			if c.status == http.StatusMethodNotAllowed && w.Header().Get("Allow") == "" {
				t.Fatalf("405 without Allow")
			}
		})
	}
}

func hasField(details []slotstore.FieldError, field string) bool {
	for _, d := range details {
		if d.Field == field && d.Reason != "" {
			return true
		}
	}
	return false
}

// encodeBad builds a cursor from raw parts, valid or not.
func encodeBad(version byte, slot uint16, uid string) string {
	p := position{slot: slotstore.HashSlot(slot), after: uid}
	s := encodeCursor(p)
	if version == cursorVersion {
		return s
	}
	b := []byte{version, byte(slot >> 8), byte(slot)}
	return encodeRaw(append(b, uid...))
}
