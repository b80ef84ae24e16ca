package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// FuzzRequest throws arbitrary requests at the router: whatever the method,
// target, body and headers, the answer is never a 5xx and never a panic, and
// every 4xx carries the error body with a code that maps to its status.
// Seeds live in testdata/fuzz/FuzzRequest; run with
//
//	go test -run '^$' -fuzz FuzzRequest -fuzztime 30s ./internal/httpapi/
func FuzzRequest(f *testing.F) {
	f.Add("GET", "/v1/users/alice", []byte(nil), "", "", "")
	f.Fuzz(func(t *testing.T, method, target string, body []byte, contentType, hdrName, hdrValue string) {
		var raw bytes.Buffer
		fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\nHost: node1\r\nContent-Length: %d\r\n", method, target, len(body))
		if contentType != "" {
			fmt.Fprintf(&raw, "Content-Type: %s\r\n", contentType)
		}
		if hdrName != "" {
			fmt.Fprintf(&raw, "%s: %s\r\n", hdrName, hdrValue)
		}
		raw.WriteString("\r\n")
		raw.Write(body)
		r, err := http.ReadRequest(bufio.NewReader(&raw))
		if err != nil {
			t.Skip("net/http would refuse this request itself")
		}

		fb := newFake(t, 3)
		fb.users["alice"] = &meta.User{UID: "alice", Name: "Alice", Extra: `{"a":1}`, Revision: 1}
		fb.users["bob"] = &meta.User{UID: "bob", Revision: 2}
		fb.kvs["k"] = &meta.KV{Key: "k", Value: []byte("v"), Revision: 3}
		fb.rev = 3
		h := newHandler(t, fb, func(c *Config) { c.MaxBodyBytes = 4 << 10 })
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)

		if w.Code >= 500 {
			t.Fatalf("%s %q → %d %s", method, target, w.Code, w.Body)
		}
		if w.Code < 400 {
			if w.Code != http.StatusNoContent && strings.HasPrefix(r.URL.Path, "/v1/") && !json.Valid(w.Body.Bytes()) {
				t.Fatalf("%s %q → %d with a body that is not JSON: %q", method, target, w.Code, w.Body)
			}
			return
		}
		var eb errorBody
		dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&eb); err != nil || eb.Error.Code == "" {
			t.Fatalf("%s %q → %d without the error body: %q", method, target, w.Code, w.Body)
		}
		if want := httpStatus(eb.Error.Code); want != w.Code && !(w.Code == http.StatusMethodNotAllowed && eb.Error.Code == slotstore.CodeInvalidArgument) {
			t.Fatalf("%s %q → %d with code %s (maps to %d)", method, target, w.Code, eb.Error.Code, want)
		}
	})
}
