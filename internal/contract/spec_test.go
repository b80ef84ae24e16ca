// Package contract holds the HTTP API to openapi.yaml, its contract, on a real
// node: every exchange of a scripted walk, every GET the spec lists, the
// generated Go client, and the router's routes are checked against the spec
// with kin-openapi. It has test files only.
//
// The spec is openapi.yaml (as embedded and served) plus every fragment
// openapi.d/*.yaml not yet merged into it, so paths added by a fragment are
// checked from the moment the fragment lands. A fragment is a partial OpenAPI
// document: top-level `paths`, `components` and `tags` (`openapi`, `info`,
// `servers` and `security` are ignored), with $refs into the merged document
// ('#/components/schemas/X'). It may add paths, operations of an existing
// path, and components; it may repeat what is already there identically, but
// it must not redefine anything differently.
package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"go.yaml.in/yaml/v4"

	"slotmeta"
)

// fragmentGlob names the spec fragments, relative to this package.
const fragmentGlob = "../../openapi.d/*.yaml"

func init() {
	// Bodies the API answers as text: validate them as strings.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/openmetrics-text", openapi3filter.PlainBodyDecoder)
}

// rawSpec is a parsed YAML document: maps, slices and scalars.
type rawSpec = map[string]any

// loadRawSpec returns openapi.yaml with every fragment merged in, and the
// fragments' names.
func loadRawSpec() (rawSpec, []string, error) {
	root, err := parseYAML("openapi.yaml", slotmeta.OpenAPI)
	if err != nil {
		return nil, nil, err
	}
	names, err := filepath.Glob(fragmentGlob)
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(names)
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, nil, err
		}
		frag, err := parseYAML(name, data)
		if err != nil {
			return nil, nil, err
		}
		if err := mergeFragment(root, frag); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", filepath.Base(name), err)
		}
	}
	return root, names, nil
}

func parseYAML(name string, data []byte) (rawSpec, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m, ok := normalize(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: not a YAML mapping", name)
	}
	return m, nil
}

// normalize gives every mapping string keys (YAML allows `200:` unquoted).
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalize(e)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = normalize(e)
		}
	}
	return v
}

// mergeFragment adds frag's paths, components and tags to root.
func mergeFragment(root, frag rawSpec) error {
	var errs []error
	for key, v := range frag {
		switch key {
		case "openapi", "info", "servers", "security":
		case "paths": // path → operation (or path-level parameters, …)
			errs = append(errs, mergeMaps(root, "paths", v, 2))
		case "components": // section → name
			errs = append(errs, mergeMaps(root, "components", v, 2))
		case "tags":
			errs = append(errs, mergeTags(root, v))
		default:
			errs = append(errs, fmt.Errorf("unexpected top-level key %q (a fragment has paths, components and tags)", key))
		}
	}
	return errors.Join(errs...)
}

// mergeMaps merges src into dst[key], descending levels mappings deep;
// below that a value must be new or equal to the one already there.
func mergeMaps(dst map[string]any, key string, src any, levels int) error {
	cur, exists := dst[key]
	if !exists {
		dst[key] = src
		return nil
	}
	dm, dok := cur.(map[string]any)
	sm, sok := src.(map[string]any)
	if levels == 0 || !dok || !sok {
		if sameJSON(cur, src) {
			return nil
		}
		return fmt.Errorf("%s is defined differently from what the spec already has", key)
	}
	var errs []error
	for _, k := range sortedKeys(sm) {
		if err := mergeMaps(dm, k, sm[k], levels-1); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// sameJSON compares two parsed values as the JSON they stand for, so that
// 128 parsed from YAML equals 128 decoded as a json.Number.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func mergeTags(root rawSpec, v any) error {
	tags, ok := v.([]any)
	if !ok {
		return errors.New("tags is not a list")
	}
	have, _ := root["tags"].([]any)
	known := map[any]bool{}
	for _, t := range have {
		if m, ok := t.(map[string]any); ok {
			known[m["name"]] = true
		}
	}
	for _, t := range tags {
		if m, ok := t.(map[string]any); ok && !known[m["name"]] {
			have = append(have, t)
			known[m["name"]] = true
		}
	}
	root["tags"] = have
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// spec is a loaded, valid contract and a router over its operations.
type spec struct {
	doc    *openapi3.T
	router routers.Router
	// tokens: the server under test has API tokens, so the spec's security
	// requirement (a bearer token) applies; without tokens it needs none.
	tokens bool
}

// newSpec loads raw with kin-openapi, validates it (the in-`make test` lint
// of the contract: structure, $refs, defaults and examples against their
// schemas, …) and routes its paths regardless of its servers.
func newSpec(raw rawSpec) (*spec, error) {
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	doc.Servers = nil // servers: [/] would make every path relative to the request's host
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return &spec{doc: doc, router: router}, nil
}

// cloneRaw deep-copies raw (for drift fixtures).
func cloneRaw(raw rawSpec) rawSpec {
	data, err := json.Marshal(raw)
	if err != nil {
		panic(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var c rawSpec
	if err := dec.Decode(&c); err != nil {
		panic(err)
	}
	return c
}

// operations lists "METHOD /path" for every operation of the spec, sorted.
func (s *spec) operations() []string {
	var ops []string
	for path, item := range s.doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}
