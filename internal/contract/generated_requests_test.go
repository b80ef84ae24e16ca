package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
)

// Requests generated from the spec: the spec must state exactly what the
// server enforces. For every operation, requests made from its schemas —
// path and query parameters, bodies with their patterns, byte and length
// bounds, ranges and enums — go to a real node through the validating
// client: a request the spec allows must not be refused as invalid (400),
// and one made invalid in a single place the spec names (a pattern broken,
// a bound passed by one, an unknown member) must be refused 400 with the
// error JSON, by the server and the spec alike. Every answer must be one
// the spec declares.

// generatedRounds is how many valid requests each operation gets.
const generatedRounds = 4

// mutatingCluster reports operations that change the cluster itself
// (nodes, groups, tasks, the balancer, hash-slot moves): their valid
// requests would reshape the one-node test cluster under the rest, so they
// are sent only made invalid (refused before anything is done).
func mutatingCluster(method, path string) bool {
	return method != http.MethodGet && strings.HasPrefix(path, "/v1/cluster") && path != "/v1/cluster/routes/resolve"
}

// semanticRule lists the valid-by-schema requests the server refuses 400 for
// a rule between fields that a schema cannot state (the spec says it in
// words): the operation, and what the refusal's message says.
var semanticRule = map[string]*regexp.Regexp{
	"POST /v1/channels/{channel_type}/{channel_id}/migrations/{task_id}/advance": regexp.MustCompile(`phase: must come after expected_phase`),
	"POST /v1/channels/{channel_type}/{channel_id}/runtime":                      regexp.MustCompile(`must be one of replicas|must be a subset of replicas|must hold 1 to len\(replicas\)|must be 1 to len\(replicas\)`),
	"POST /v1/watch/stream/{stream_id}":                                          regexp.MustCompile(`at most one of|filters resources of|filter kv only|a channel filter needs|cursor: |covers other hash slots`),
	"PUT /v1/channels/{channel_type}/{channel_id}/runtime":                       regexp.MustCompile(`must be one of replicas|must be a subset of replicas|must hold 1 to len\(replicas\)|must be 1 to len\(replicas\)`),
}

func TestGeneratedRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("sends a few hundred requests to a real node")
	}
	n := startNode(t)
	g := &generator{rng: rand.New(rand.NewPCG(25, 2026)), patterns: map[string]*regexp.Regexp{}}
	valid, invalid := 0, 0
	for _, op := range n.spec.operations() {
		method, path, _ := strings.Cut(op, " ")
		item := n.spec.doc.Paths.Find(path)
		o := item.GetOperation(method)
		params := append(slices.Clone(item.Parameters), o.Parameters...)
		body := jsonBody(o)
		if len(params) == 0 && body == nil {
			continue // nothing to generate (GET /healthz, say)
		}
		if !mutatingCluster(method, path) {
			for range generatedRounds {
				target, b := g.request(path, params, body)
				r := n.send(t, false, method, target, b)
				valid++
				if r.code == http.StatusBadRequest {
					if re := semanticRule[op]; re == nil || !re.Match(r.body) {
						t.Errorf("%s %s: the spec allows it, the server refused it: %.400s\nbody: %.400s", method, target, r.body, b)
					}
				}
				if r.code >= 500 && r.code != http.StatusServiceUnavailable {
					t.Errorf("%s %s: %d %.300s", method, target, r.code, r.body)
				}
			}
		}
		for _, m := range g.mutations(path, params, body) {
			r := n.send(t, m.specKnows, method, m.target, m.body)
			invalid++
			if r.code != http.StatusBadRequest || r.errCode() != "invalid_argument" {
				t.Errorf("%s %s (%s): %d %.300s, want 400 invalid_argument\nbody: %.300s", method, m.target, m.what, r.code, r.body, m.body)
			}
		}
	}
	t.Logf("%d valid and %d invalid generated requests", valid, invalid)
	if valid < 100 || invalid < 100 {
		t.Fatalf("only %d valid and %d invalid requests were generated", valid, invalid)
	}
}

// send sends one request through the validating client (refused: the spec
// must refuse it too) and returns the answer, whatever its status.
func (n *node) send(t *testing.T, refusedBySpec bool, method, target, body string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if refusedBySpec {
		ctx = refused(ctx)
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, n.url+target, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	resp, err := n.client.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return reply{code: resp.StatusCode, header: resp.Header} // a watch: it started; closing ends it
	}
	b, _ := io.ReadAll(resp.Body)
	return reply{code: resp.StatusCode, header: resp.Header, body: b}
}

func jsonBody(o *openapi3.Operation) *openapi3.Schema {
	if o.RequestBody == nil || o.RequestBody.Value == nil {
		return nil
	}
	mt := o.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	return mt.Schema.Value
}

// generator makes values of schemas, deterministically from its seed.
type generator struct {
	rng      *rand.Rand
	patterns map[string]*regexp.Regexp
}

// alphabet is what generated strings are made of: ASCII, punctuation the
// rules single out, and characters of two, three and four UTF-8 bytes.
var alphabet = []string{"a", "b", "Z", "0", "7", "-", "_", ".", ":", "~", "+", "@", "é", "中", "😀"}

func (g *generator) request(path string, params openapi3.Parameters, body *openapi3.Schema) (target, b string) {
	vals := map[string]string{}
	target = path
	q := url.Values{}
	for _, p := range params {
		pv := p.Value
		if pv.Schema == nil {
			continue
		}
		switch {
		case pv.In == "path":
			v := g.scalar(pv.Schema.Value)
			vals[pv.Name] = v
			target = strings.Replace(target, "{"+pv.Name+"}", url.PathEscape(v), 1)
		case pv.In == "query" && pv.Required:
			q.Set(pv.Name, g.scalar(pv.Schema.Value))
		}
	}
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	if body != nil {
		v := g.value(body, 0)
		if obj, ok := v.(map[string]any); ok {
			// A body member named like a path parameter names the same
			// thing (the server requires them equal): the path's value.
			for name, pv := range vals {
				if _, has := obj[name]; has {
					obj[name] = typedLike(body.Properties[name], pv)
				}
			}
		}
		raw, _ := json.Marshal(v)
		b = string(raw)
	}
	return target, b
}

// typedLike is s (a path value) as the JSON type of schema.
func typedLike(schema *openapi3.SchemaRef, s string) any {
	if schema != nil && schema.Value != nil && schema.Value.Type.Is("integer") {
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	return s
}

// scalar is a generated value of a parameter schema, as text.
func (g *generator) scalar(s *openapi3.Schema) string {
	switch v := g.value(s, 0).(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func (g *generator) value(s *openapi3.Schema, depth int) any {
	if len(s.AllOf) > 0 {
		return g.value(s.AllOf[0].Value, depth)
	}
	if len(s.OneOf) > 0 {
		return g.value(s.OneOf[g.rng.IntN(len(s.OneOf))].Value, depth)
	}
	if len(s.Enum) > 0 {
		return s.Enum[g.rng.IntN(len(s.Enum))]
	}
	switch {
	case s.Type.Is("string"):
		return g.str(s)
	case s.Type.Is("integer"):
		return g.integer(s)
	case s.Type.Is("number"):
		return float64(g.integer(s)) + 0.5
	case s.Type.Is("boolean"):
		return g.rng.IntN(2) == 1
	case s.Type.Is("array"):
		n := int(s.MinItems)
		hi := n + 3
		if s.MaxItems != nil {
			hi = min(hi, int(*s.MaxItems))
		}
		if hi > n {
			n += g.rng.IntN(hi - n + 1)
		}
		out := make([]any, 0, n)
		seen := map[string]bool{}
		for tries := 0; len(out) < n && tries < 20*n; tries++ {
			v := g.value(s.Items.Value, depth+1)
			key, _ := json.Marshal(v)
			if s.UniqueItems && seen[string(key)] {
				continue
			}
			seen[string(key)] = true
			out = append(out, v)
		}
		return out
	case s.Type.Is("object") || len(s.Properties) > 0:
		obj := map[string]any{}
		for _, name := range sortedKeys(s.Properties) { // sorted: the same values every run
			if slices.Contains(s.Required, name) || (depth < 3 && g.rng.IntN(2) == 0) {
				obj[name] = g.value(s.Properties[name].Value, depth+1)
			}
		}
		return obj
	}
	// No type: any JSON (a user's extra, say).
	return map[string]any{"note": g.str(&openapi3.Schema{}), "n": g.rng.IntN(1000), "list": []any{1, "two", nil}}
}

func (g *generator) integer(s *openapi3.Schema) int64 {
	lo, hi := int64(0), int64(1000)
	if s.Min != nil {
		lo = int64(*s.Min)
		hi = lo + 1000
	}
	if s.Max != nil {
		hi = int64(*s.Max)
	}
	switch {
	case hi <= lo:
		return lo
	case g.rng.IntN(8) == 0:
		return hi // the bound itself is allowed
	}
	return lo + g.rng.Int64N(min(hi-lo, 50)+1)
}

// maxBytes is a string schema's x-max-bytes (0: none).
func maxBytes(s *openapi3.Schema) int {
	switch v := s.Extensions["x-max-bytes"].(type) {
	case float64:
		return int(v)
	case int:
		return v
	case json.Number:
		n, _ := v.Int64()
		return int(n)
	}
	return 0
}

func (g *generator) pattern(s *openapi3.Schema) *regexp.Regexp {
	if s.Pattern == "" {
		return nil
	}
	re, ok := g.patterns[s.Pattern]
	if !ok {
		re = regexp.MustCompile(s.Pattern)
		g.patterns[s.Pattern] = re
	}
	return re
}

// fits reports whether v meets every bound of string schema s.
func (g *generator) fits(s *openapi3.Schema, v string) bool {
	chars := utf8.RuneCountInString(v)
	if uint64(chars) < s.MinLength || (s.MaxLength != nil && uint64(chars) > *s.MaxLength) {
		return false
	}
	if mb := maxBytes(s); mb > 0 && len(v) > mb {
		return false
	}
	re := g.pattern(s)
	return re == nil || re.MatchString(v)
}

func (g *generator) str(s *openapi3.Schema) string {
	lo := max(int(s.MinLength), 1)
	hi := lo + 12
	if s.MaxLength != nil {
		hi = min(hi, int(*s.MaxLength))
	}
	for range 500 {
		n := lo
		if hi > lo {
			n += g.rng.IntN(hi - lo + 1)
		}
		var b strings.Builder
		for range n {
			b.WriteString(alphabet[g.rng.IntN(len(alphabet))])
		}
		if v := b.String(); g.fits(s, v) {
			return v
		}
	}
	if ex, ok := s.Example.(string); ok && g.fits(s, ex) {
		return ex // a pattern random strings do not meet (a list of names)
	}
	for _, v := range []string{"a", "1", strings.Repeat("a", lo), `"1"`, "*"} {
		if g.fits(s, v) {
			return v
		}
	}
	panic(fmt.Sprintf("no string fits %+v", s))
}

// mutation is a request made invalid in one place.
type mutation struct {
	what, target, body string
	// specKnows: a validator of the spec refuses it too. Not so for a
	// string past its x-max-bytes within its maxLength: JSON Schema counts
	// characters, the server bytes, and says so in x-max-bytes.
	specKnows bool
}

// breakers are strings that break the patterns of names and keys: the
// characters and forms the server refuses.
var breakers = []string{"a b", "a/b", "a\u0007b", "a\u3000b", ".", "..", "a\u0085b", "a\tb", "a\x7fb"}

func (g *generator) mutations(path string, params openapi3.Parameters, body *openapi3.Schema) []mutation {
	var out []mutation
	target, b := g.request(path, params, body)
	// Path parameters one at a time.
	for _, p := range params {
		pv := p.Value
		if pv.In != "path" || pv.Schema == nil {
			continue
		}
		bads := g.invalid(pv.Schema.Value, true)
		for _, what := range sortedKeys(bads) {
			bad := bads[what]
			t, _ := g.request(path, params, nil)
			// Rebuild the target with this parameter broken: take a valid
			// one and replace the parameter's segment.
			t = brokenPath(path, params, t, pv.Name, bad)
			out = append(out, mutation{what: pv.Name + ": " + what, target: t, body: b, specKnows: what != byteBound})
		}
	}
	if body == nil {
		return out
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(b), &obj); err != nil {
		return out
	}
	if body.AdditionalProperties.Has != nil && !*body.AdditionalProperties.Has {
		out = append(out, mutation{what: "unknown member", target: target, body: withMember(obj, "zz_unknown", 1), specKnows: true})
	}
	for _, name := range sortedKeys(body.Properties) {
		bads := g.invalid(body.Properties[name].Value, false)
		for _, what := range sortedKeys(bads) {
			bad := bads[what]
			out = append(out, mutation{what: name + ": " + what, target: target, body: withMember(obj, name, bad), specKnows: what != byteBound})
		}
	}
	return out
}

// byteBound names the mutation past a string's x-max-bytes.
const byteBound = "one byte too many"

// invalid makes values that break schema s in one way each, by what they
// break. A path parameter (inPath) is never given a "/" (it would name
// another route) nor "." and ".." (clients clean them out of paths).
func (g *generator) invalid(s *openapi3.Schema, inPath bool) map[string]any {
	out := map[string]any{}
	switch {
	case len(s.Enum) > 0:
		if s.Type.Is("string") {
			out["not in the enum"] = "zz-not-in-enum"
		}
	case s.Type.Is("string"):
		if re := g.pattern(s); re != nil {
			for _, bad := range breakers {
				if inPath && (strings.Contains(bad, "/") || bad == "." || bad == "..") {
					continue
				}
				if !re.MatchString(bad) {
					out["pattern broken by "+strconv.Quote(bad)] = bad
					break
				}
			}
		}
		if s.MaxLength != nil {
			out["one character too many"] = strings.Repeat("a", int(*s.MaxLength)+1)
		}
		if mb := maxBytes(s); mb > 0 && !inPath {
			// Within maxLength in characters, past the bytes.
			if v := strings.Repeat("中", mb/3+1); s.MaxLength == nil || uint64(utf8.RuneCountInString(v)) <= *s.MaxLength {
				out[byteBound] = v
			}
		}
		if !inPath {
			out["a number for a string"] = 5
		}
	case s.Type.Is("integer"):
		if s.Max != nil && *s.Max < 1<<53 {
			out["above the maximum"] = int64(*s.Max) + 1
		}
		if s.Min != nil && *s.Min > -1<<53 {
			out["below the minimum"] = int64(*s.Min) - 1
		}
		if !inPath {
			out["a string for an integer"] = "5"
		}
	}
	return out
}

// brokenPath is valid target with parameter name's segment replaced by bad.
func brokenPath(tmpl string, params openapi3.Parameters, valid, name string, bad any) string {
	tsegs, vsegs := strings.Split(tmpl, "/"), strings.Split(valid, "/")
	for i, seg := range tsegs {
		if seg == "{"+name+"}" && i < len(vsegs) {
			vsegs[i] = url.PathEscape(fmt.Sprint(bad))
		}
	}
	return strings.Join(vsegs, "/")
}

func withMember(obj map[string]any, name string, v any) string {
	c := make(map[string]any, len(obj)+1)
	for k, x := range obj {
		c[k] = x
	}
	c[name] = v
	b, _ := json.Marshal(c)
	return string(b)
}
