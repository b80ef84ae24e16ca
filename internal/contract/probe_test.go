package contract

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestContractProbeGets sends every GET operation of the spec, the ones
// added by new resources included, to a real node: path parameters get a
// sample value (most likely naming nothing, so the answer is usually a 404
// or an empty list), optional parameters are left out. Whatever the node
// answers must be what the spec says; a 500 fails too. Writes are left to
// the scripted walk: a probe must not change anything.
func TestContractProbeGets(t *testing.T) {
	n := startNode(t)
	probed := 0
	defer func() {
		if probed == 0 {
			t.Error("no GET operation was probed")
		}
	}()
	for _, op := range n.spec.operations() {
		method, path, _ := strings.Cut(op, " ")
		if method != http.MethodGet {
			continue
		}
		item := n.spec.doc.Paths.Find(path)
		target, why := probeTarget(path, item.Parameters, item.Get.Parameters)
		if why != "" {
			t.Logf("%s: not probed: %s", op, why)
			continue
		}
		r := n.get(target)
		if r.code >= 500 && r.code != http.StatusServiceUnavailable {
			t.Errorf("%s %s: %d %.300s", method, target, r.code, r.body)
		}
		probed++
		t.Logf("%s: GET %s → %d", op, target, r.code)
	}
}

// get sends a GET through the checking client, whatever it answers.
func (n *node) get(path string) reply {
	n.t.Helper()
	resp, err := n.client.Get(n.url + path)
	if err != nil {
		n.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return reply{code: resp.StatusCode, header: resp.Header} // a watch started; closing ends it
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		n.t.Fatal(err)
	}
	return reply{code: resp.StatusCode, header: resp.Header, body: body}
}

// probeTarget fills path's parameters with sample values and adds the
// required query parameters. It explains why when it cannot.
func probeTarget(path string, params ...openapi3.Parameters) (string, string) {
	q := url.Values{}
	for _, ps := range params {
		for _, ref := range ps {
			p := ref.Value
			if p == nil || (p.In != "path" && !p.Required) {
				continue
			}
			v, ok := sampleValue(p.Schema)
			if !ok {
				return "", fmt.Sprintf("no sample value for %s parameter %s", p.In, p.Name)
			}
			switch p.In {
			case "path":
				path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(v))
			case "query":
				q.Set(p.Name, v)
			default:
				return "", fmt.Sprintf("required %s parameter %s", p.In, p.Name)
			}
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return path, ""
}

// sampleValue is a value of schema: its example, its default, its first
// enum value, or one made from its type and bounds.
func sampleValue(ref *openapi3.SchemaRef) (string, bool) {
	if ref == nil || ref.Value == nil {
		return "", false
	}
	s := ref.Value
	for _, v := range []any{s.Example, s.Default} {
		if v != nil {
			return fmt.Sprint(v), true
		}
	}
	if len(s.Enum) > 0 {
		return fmt.Sprint(s.Enum[0]), true
	}
	switch {
	case s.Type.Is("integer"), s.Type.Is("number"):
		v := 1.0
		if s.Min != nil && *s.Min > v {
			v = *s.Min
		}
		return fmt.Sprint(int64(v)), true
	case s.Type.Is("boolean"):
		return "true", true
	case s.Type.Is("string") && s.Pattern == "" && s.Format == "":
		v := "contract-probe"
		for uint64(len(v)) < s.MinLength {
			v += "-"
		}
		if s.MaxLength != nil && uint64(len(v)) > *s.MaxLength {
			v = v[:*s.MaxLength]
		}
		return v, true
	}
	return "", false
}
