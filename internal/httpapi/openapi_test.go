package httpapi

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// specOperations lists "METHOD /path" for every operation of openapi.yaml.
// It reads the file's fixed layout (paths two spaces in, methods four)
// rather than parsing YAML, which keeps this package free of a YAML library.
func specOperations(t *testing.T, spec []byte) []string {
	t.Helper()
	var ops []string
	inPaths, path := false, ""
	sc := bufio.NewScanner(bytes.NewReader(spec))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "paths:":
			inPaths = true
		case !inPaths || strings.TrimSpace(line) == "":
		case !strings.HasPrefix(line, " "):
			inPaths = false
		case strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":"):
			path = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			m := strings.TrimSuffix(strings.TrimSpace(line), ":")
			if slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options"}, m) {
				ops = append(ops, strings.ToUpper(m)+" "+path)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// TestOpenAPIDescribesEveryRoute holds the router and openapi.yaml to each
// other: every route is an operation of the contract and vice versa, and
// the contract's error codes are the error table's.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	spec, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, newFake(t, 1), func(c *Config) {
		c.OpenAPI = spec
		c.Console = http.NotFoundHandler()
	})
	var routes []string
	err = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, "/console") {
			routes = append(routes, method+" "+strings.TrimSuffix(route, "/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(routes)
	if ops := specOperations(t, spec); !slices.Equal(routes, ops) {
		t.Fatalf("router and openapi.yaml differ:\nrouter %v\nspec   %v", routes, ops)
	}
	for code := range statusOf {
		if !bytes.Contains(spec, []byte("\n        - "+string(code)+"\n")) {
			t.Errorf("openapi.yaml's ErrorCode lacks %s", code)
		}
	}
}
