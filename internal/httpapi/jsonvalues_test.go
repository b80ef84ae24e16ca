package httpapi

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// bodyRoutes is every operation of openapi.yaml that takes a JSON body,
// with its path filled in (TestEveryBodyRouteIsChecked holds the list to
// the spec).
var bodyRoutes = [][2]string{
	{"POST", "/v1/users"}, {"PUT", "/v1/users/u1"}, {"PUT", "/v1/kv/k1"},
	{"POST", "/v1/cluster/nodes"}, {"PUT", "/v1/cluster/balancer"}, {"POST", "/v1/cluster/routes/resolve"}, {"POST", "/v1/batch/kv/get"}, {"POST", "/v1/batch/kv/write"}, {"POST", "/v1/batch/users/get"}, {"POST", "/v1/batch/channels/get"}, {"POST", "/v1/batch/runtime/get"},
	{"POST", "/v1/cluster/groups"}, {"POST", "/v1/cluster/groups/1/leader-transfer"}, {"PUT", "/v1/cluster/groups/1/preferred-leader"}, {"POST", "/v1/cluster/groups/1/recover"},
	{"POST", "/v1/cluster/groups/1/split"}, {"POST", "/v1/cluster/groups/1/merge"}, {"POST", "/v1/cluster/groups/1/replica-moves"},
	{"POST", "/v1/cluster/hash-slots/3/migrations"},
	{"PUT", "/v1/users/u1/memberships/2/c1"}, {"POST", "/v1/users/u1/memberships/2/c1/read"}, {"POST", "/v1/users/u1/memberships/2/c1/hide"},
	{"PUT", "/v1/users/u1/cmd-bindings/2/c1"}, {"POST", "/v1/users/u1/cmd-bindings/2/c1/ack"},
	{"POST", "/v1/channels/2/c1/runtime"}, {"PUT", "/v1/channels/2/c1/runtime"}, {"POST", "/v1/channels/2/c1/runtime/retention"},
	{"POST", "/v1/channels/2/c1/migrations"}, {"POST", "/v1/channels/2/c1/migrations/1/advance"}, {"POST", "/v1/channels/2/c1/migrations/1/abort"},
	{"POST", "/v1/channels/2/c1/events"}, {"PUT", "/v1/users/u1/devices/1"}, {"PUT", "/v1/users/u1/plugins/p1"},
	{"POST", "/v1/channels"}, {"PUT", "/v1/channels/2/c1"}, {"POST", "/v1/watch/stream/0123456789abcdef0123456789abcdef"},
	{"POST", "/v1/channels/2/c1/subscribers"}, {"POST", "/v1/channels/2/c1/subscribers/remove"},
	{"POST", "/v1/channels/2/c1/denylist"}, {"POST", "/v1/channels/2/c1/denylist/remove"},
	{"POST", "/v1/channels/2/c1/allowlist"}, {"POST", "/v1/channels/2/c1/allowlist/remove"},
}

// badValues are bodies whose values a reader could not take back, each
// with what the refusal must say.
var badValues = []struct{ name, body, says string }{
	{"number beyond float64", `{"extra":{"n":1e400}}`, "64-bit float"},
	{"negative number beyond float64", `{"extra":[-1.5e309]}`, "64-bit float"},
	{"integer beyond int64", `{"extra":{"n":9223372036854775808}}`, "64-bit integer"},
	{"integer below int64", `{"extra":{"n":-9223372036854775809}}`, "64-bit integer"},
	{"nesting too deep", `{"extra":` + strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth) + `}`, "nests deeper"},
	{"nesting 1000 deep", `{"extra":` + strings.Repeat(`{"a":`, 1000) + "1" + strings.Repeat("}", 1000) + `}`, "nests deeper"},
	{"invalid UTF-8 in a value", "{\"extra\":\"a\xffb\"}", "UTF-8"},
	{"overlong UTF-8", "{\"name\":\"\xc0\xaf\"}", "UTF-8"},
	{"encoded surrogate in UTF-8", "{\"name\":\"\xed\xa0\x80\"}", "UTF-8"},
	{"invalid UTF-8 in a member name", "{\"\xff\":1}", "UTF-8"},
	{"lone high surrogate", `{"name":"a\ud800b"}`, "surrogate"},
	{"lone low surrogate", `{"name":"\udc00"}`, "surrogate"},
	{"high surrogate at the end", `{"name":"x\uD83D"}`, "surrogate"},
	{"two high surrogates", `{"name":"\ud83d\ud83d\ude00"}`, "surrogate"},
	{"high surrogate then an escape", `{"name":"\ud83d\n"}`, "surrogate"},
}

// TestStoredValuesCanBeReadBack: every route that takes a body refuses,
// with 400 and a message naming the problem, before the backend is
// reached, each value that would be stored as something else (U+FFFD) or
// that breaks a reader (a number no float64 holds, an integer no int64
// holds, nesting past MaxJSONDepth).
func TestStoredValuesCanBeReadBack(t *testing.T) {
	for _, route := range bodyRoutes {
		for _, bad := range badValues {
			f := newFake(t, 4)
			w := do(t, newHandler(t, f), route[0], route[1], bad.body)
			if w.Code != 400 {
				t.Errorf("%s %s, %s: status %d, want 400: %s", route[0], route[1], bad.name, w.Code, w.Body)
				continue
			}
			e := decodeError(t, w)
			if e.Code != slotstore.CodeInvalidArgument || !strings.Contains(e.Message, bad.says) {
				t.Errorf("%s %s, %s: %s %q, want invalid_argument saying %q", route[0], route[1], bad.name, e.Code, e.Message, bad.says)
			}
			if calls := f.Calls(); len(calls) != 0 {
				t.Errorf("%s %s, %s: reached the backend: %v", route[0], route[1], bad.name, calls)
			}
		}
	}
}

// TestGoodValuesPass: what a reader takes back is not refused.
func TestGoodValuesPass(t *testing.T) {
	for _, body := range []string{
		`{"a":"😀 \ud83d\ude00 é \u00e9 \\ud800 \" \\"}`, // a pair, an escaped backslash before "ud800"
		`{"a":[1.7976931348623157e308,-1.7976931348623157e308,4.9e-324,1e-400]}`,
		`{"a":[9223372036854775807,-9223372036854775808,0,-0,1.0,1E5,18446744073709551615.0]}`,
		`{"a":` + strings.Repeat("[", MaxJSONDepth-1) + strings.Repeat("]", MaxJSONDepth-1) + `}`,
		`{"a":"[[[[{{{{"}`,
	} {
		if err := checkJSONValues([]byte(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// TestEveryBodyRouteIsChecked holds bodyRoutes to openapi.yaml.
func TestEveryBodyRouteIsChecked(t *testing.T) {
	spec, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Count the operations with a requestBody: the spec writes each as
	// "requestBody:" under its operation.
	if n := bytes.Count(spec, []byte("\n      requestBody:")); n != len(bodyRoutes) {
		t.Fatalf("openapi.yaml has %d operations with a body, bodyRoutes %d: add the new one", n, len(bodyRoutes))
	}
}

// FuzzCheckJSONValues: the scan never panics, and a body it lets through
// that is valid JSON decodes into Go values without loss: no U+FFFD that
// was not sent, numbers within float64, nesting within the bound.
func FuzzCheckJSONValues(f *testing.F) {
	for _, b := range badValues {
		f.Add([]byte(b.body))
	}
	f.Add([]byte(`{"a":"\ud83d\ude00","b":[1,2.5,-3e10],"c":{"d":null,"e":true}}`))
	f.Add([]byte(`{"a":"\\ud800"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		err := checkJSONValues(body)
		if err != nil || !json.Valid(body) {
			return
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("accepted %q, which does not decode: %v", body, err)
		}
		if depth(v) > MaxJSONDepth {
			t.Fatalf("accepted %q, nested %d deep", body, depth(v))
		}
		if !bytes.Contains(body, []byte("\ufffd")) && !surrogateFFFD.Match(body) && containsFFFD(v) {
			t.Fatalf("accepted %q, which decodes with U+FFFD it did not send", body)
		}
		if !utf8.Valid(body) {
			t.Fatalf("accepted invalid UTF-8 %q", body)
		}
	})
}

var surrogateFFFD = regexp.MustCompile(`(?i)\\ufffd`)

func depth(v any) int {
	switch x := v.(type) {
	case []any:
		d := 0
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case map[string]any:
		d := 0
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

func containsFFFD(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.ContainsRune(x, utf8.RuneError)
	case []any:
		for _, e := range x {
			if containsFFFD(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if strings.ContainsRune(k, utf8.RuneError) || containsFFFD(e) {
				return true
			}
		}
	}
	return false
}
