package contract

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/slotmeta/slotmeta/internal/httpapi"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// noBackend stands in for a node where only the router is looked at.
type noBackend struct{ httpapi.Backend }

// Operator is asked once, when the API is built; the router never calls it.
func (noBackend) Operator() slotstore.Operator { return nil }

// apiHandler is the real API handler, configured as cmd/server configures
// it, over a backend it never calls.
func apiHandler(t testing.TB) http.Handler {
	t.Helper()
	h, err := httpapi.New(apiConfig(noBackend{}))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRoutesMatchSpec holds the router and the spec to each other: every
// route served is an operation of the spec and every operation is served.
// Routes that are not API operations are listed in notAPI.
func TestRoutesMatchSpec(t *testing.T) {
	s, _ := contractSpec(t)
	h := apiHandler(t)
	if err := s.checkRoutes(h); err != nil {
		t.Fatalf("router and spec differ (a new route needs its operation in openapi.yaml):\n%v", err)
	}
	served, err := servedRoutes(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"GET /v1/users/{uid}", "PUT /v1/kv/{key}", "GET /docs", "GET /openapi.yaml"} {
		if !slices.Contains(served, must) {
			t.Errorf("the route walk misses %s: %v", must, served)
		}
	}
}

// TestDocsServed checks /docs through the real router: the page and its
// assets answer GET, any other method 405 like every route.
func TestDocsServed(t *testing.T) {
	h := apiHandler(t)
	for _, path := range []string{"/docs", "/docs/", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css", "/docs/docs.js"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK {
			t.Errorf("GET %s: %d", path, w.Code)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/docs", nil))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /docs: %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
}
