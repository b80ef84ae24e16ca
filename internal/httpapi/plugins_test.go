package httpapi

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// The body of PUT …/plugins/{plugin_no} is optional whatever its framing:
// no body, an empty Content-Length body and an empty chunked body are all
// "no body"; a chunked body with content is read whole.
func TestHasBody(t *testing.T) {
	r := httptest.NewRequest("PUT", "/", nil)
	if hasBody(r) {
		t.Fatal("no body")
	}
	r = httptest.NewRequest("PUT", "/", strings.NewReader(""))
	if hasBody(r) {
		t.Fatal("empty body")
	}
	r = httptest.NewRequest("PUT", "/", io.NopCloser(strings.NewReader("")))
	r.ContentLength = -1 // chunked
	if hasBody(r) {
		t.Fatal("empty chunked body")
	}
	r = httptest.NewRequest("PUT", "/", io.NopCloser(strings.NewReader(`{"config":1}`)))
	r.ContentLength = -1
	if !hasBody(r) {
		t.Fatal("chunked body with content")
	}
	if b, _ := io.ReadAll(r.Body); string(b) != `{"config":1}` {
		t.Fatalf("the peeked body reads %q", b)
	}
}

func TestPluginNoAndDeviceFlagProblems(t *testing.T) {
	for s, ok := range map[string]bool{
		"p": true, "A-z_0.9": true, strings.Repeat("p", 64): true,
		"": false, ".": false, "..": false, "a b": false, "a/b": false, "é": false, strings.Repeat("p", 65): false,
	} {
		if got := pluginNoProblem(s) == ""; got != ok {
			t.Errorf("pluginNoProblem(%q) ok=%v, want %v", s, got, ok)
		}
	}
	for s, ok := range map[string]bool{"0": true, "7": true, "255": true, "256": false, "-1": false, "+1": false, "01": false, "": false, "x": false} {
		if got := deviceFlagProblem(s) == ""; got != ok {
			t.Errorf("deviceFlagProblem(%q) ok=%v, want %v", s, got, ok)
		}
	}
}
