package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDocs(t *testing.T) {
	h := Docs()
	get := func(path string) *httptest.ResponseRecorder {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	for _, path := range []string{"/docs", "/docs/"} {
		w := get(path)
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Header())
		}
		body := w.Body.String()
		for _, want := range []string{`src="/docs/swagger-ui-bundle.js"`, `href="/docs/swagger-ui.css"`, `src="/docs/docs.js"`} {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s lacks %s", path, want)
			}
		}
	}
	if w := get("/docs/docs.js"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `url: "/openapi.yaml"`) ||
		!strings.Contains(w.Body.String(), "validatorUrl: null") {
		t.Fatalf("docs.js: %d %s", w.Code, w.Body)
	}
	for path, ctype := range map[string]string{"/docs/swagger-ui-bundle.js": "javascript", "/docs/swagger-ui.css": "text/css"} {
		w := get(path)
		if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), ctype) || w.Body.Len() < 100_000 {
			t.Fatalf("GET %s: %d %s, %d bytes", path, w.Code, w.Header().Get("Content-Type"), w.Body.Len())
		}
	}
	if w := get("/docs/swagger-ui-bundle.js"); !strings.Contains(w.Body.String(), "5.35.0") {
		t.Error("the vendored bundle is not swagger-ui 5.35.0")
	}
	for _, path := range []string{"/docs/LICENSE", "/docs/nope.js", "/docs/../console.css"} {
		if w := get(path); w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, w.Code)
		}
	}
}
