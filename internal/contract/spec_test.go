// Package contract holds the HTTP API to openapi.yaml, its contract, on a real
// node: every exchange of a scripted walk, every GET the spec lists, the
// generated Go client, and the router's routes are checked against the spec
// with kin-openapi. It has test files only.
//
// The spec is openapi.yaml as embedded and served.
package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"go.yaml.in/yaml/v4"

	"github.com/slotmeta/slotmeta"
)

func init() {
	// Bodies the API answers as text: validate them as strings.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/openmetrics-text", openapi3filter.PlainBodyDecoder)
}

// rawSpec is a parsed YAML document: maps, slices and scalars.
type rawSpec = map[string]any

// loadRawSpec returns openapi.yaml, parsed.
func loadRawSpec() (rawSpec, error) {
	return parseYAML("openapi.yaml", slotmeta.OpenAPI)
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
