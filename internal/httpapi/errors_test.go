package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// decodeError parses an error response strictly: exactly the shape of docs/design.md §10.
func decodeError(t testing.TB, w *httptest.ResponseRecorder) errorJSON {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error response Content-Type %q, body %s", ct, w.Body)
	}
	var body errorBody
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("error body %q: %v", w.Body, err)
	}
	if body.Error.Code == "" || body.Error.Message == "" {
		t.Fatalf("error body without code or message: %s", w.Body)
	}
	if body.Error.Retryable != body.Error.Code.Retryable() {
		t.Fatalf("retryable=%v for code %s", body.Error.Retryable, body.Error.Code)
	}
	return body.Error
}

// allCodes is every slotstore.Code with the status docs/design.md §10 gives
// it (TestDesignListsEveryCode keeps the two in step).
var allCodes = []struct {
	code   slotstore.Code
	status int
}{
	{slotstore.CodeInvalidArgument, 400},
	{slotstore.CodeUnauthenticated, 401},
	{slotstore.CodePermissionDenied, 403},
	{slotstore.CodeNotFound, 404},
	{slotstore.CodeConflict, 409},
	{slotstore.CodeEpochStale, 409},
	{slotstore.CodeRouteRevisionMismatch, 409},
	{slotstore.CodeFailedPrecondition, 412},
	{slotstore.CodePayloadTooLarge, 413},
	{slotstore.CodeQueueFull, 429},
	{slotstore.CodeRateLimited, 429},
	{slotstore.CodeRouteNotReady, 503},
	{slotstore.CodeNotLeader, 503},
	{slotstore.CodeBusy, 503},
	{slotstore.CodeSlotMigrating, 503},
	{slotstore.CodeTimeout, 503},
	{slotstore.CodeWrongGroup, 503},
	{slotstore.CodeInternal, 500},
	{slotstore.CodeCompacted, 410},
	{slotstore.CodeSlowConsumer, 429},
	{slotstore.CodeAborted, 409},
	{slotstore.CodeNoSpace, 503},
}

func TestErrorTableMapsEveryCode(t *testing.T) {
	if len(statusOf) != len(allCodes) {
		t.Fatalf("statusOf has %d codes, the test knows %d: keep them in step", len(statusOf), len(allCodes))
	}
	for _, c := range allCodes {
		t.Run(string(c.code), func(t *testing.T) {
			if got := httpStatus(c.code); got != c.status {
				t.Fatalf("httpStatus(%s) = %d, want %d", c.code, got, c.status)
			}
			// Rendered through the whole stack, as a backend error.
			f := newFake(t, 4)
			f.proposeErr = &slotstore.Error{Code: c.code, Message: "injected", LeaderHint: 3, RetryAfter: 1500 * time.Millisecond}
			w := do(t, newHandler(t, f), "PUT", "/v1/kv/k", `{"value":"v"}`)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			e := decodeError(t, w)
			if e.Code != c.code || e.Message != "injected" || e.LeaderHint != 3 {
				t.Fatalf("body %+v", e)
			}
			ra := w.Header().Get("Retry-After")
			if c.code.Retryable() != (ra != "") {
				t.Fatalf("Retry-After %q for retryable=%v", ra, c.code.Retryable())
			}
			if ra != "" && ra != "2" {
				t.Fatalf("Retry-After %q, want 2 (1.5 s rounded up)", ra)
			}
			if w.Header().Get(hdrHashSlot) == "" {
				t.Fatalf("error of a keyed request without route headers")
			}
		})
	}
	if got := httpStatus("no_such_code"); got != 500 {
		t.Fatalf("unknown code → %d, want 500", got)
	}
}

func TestRetryAfterAtLeastOneSecond(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "1", time.Millisecond: "1", time.Second: "1", 1001 * time.Millisecond: "2", 30 * time.Second: "30"} {
		if got := retryAfterSeconds(&slotstore.Error{RetryAfter: d}); got != want {
			t.Errorf("retryAfterSeconds(%v) = %s, want %s", d, got, want)
		}
	}
}

func TestBackendErrorsThatAreNotSlotstoreErrors(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   slotstore.Code
		msg    string
	}{
		{context.DeadlineExceeded, 503, slotstore.CodeTimeout, "the request deadline passed"},
		{fmt.Errorf("wrapped: %w", context.Canceled), 503, slotstore.CodeTimeout, "the request was cancelled"},
		{errors.New("disk on fire at /secret/path"), 500, slotstore.CodeInternal, "internal error"},
		{fmt.Errorf("ctx: %w", &slotstore.Error{Code: slotstore.CodeNotLeader, Message: "moved", LeaderHint: 9}), 503, slotstore.CodeNotLeader, "moved"},
	} {
		f := newFake(t, 2)
		f.readErr = tc.err
		w := do(t, newHandler(t, f), "GET", "/v1/kv/k", "")
		if w.Code != tc.status {
			t.Fatalf("%v: status %d, want %d", tc.err, w.Code, tc.status)
		}
		if e := decodeError(t, w); e.Code != tc.code || e.Message != tc.msg {
			t.Fatalf("%v: body %+v", tc.err, e)
		}
	}
}

func TestRequestDeadline(t *testing.T) {
	f := newFake(t, 2)
	f.blockRead = true
	h := newHandler(t, f, func(c *Config) { c.RequestTimeout = 20 * time.Millisecond })
	w := do(t, h, "GET", "/v1/users/u1", "")
	if w.Code != http.StatusServiceUnavailable || decodeError(t, w).Code != slotstore.CodeTimeout {
		t.Fatalf("status %d body %s", w.Code, w.Body)
	}
}

func TestPanicAnswersInternalJSON(t *testing.T) {
	f := newFake(t, 2)
	f.panicMsg = "boom"
	w := do(t, newHandler(t, f), "PUT", "/v1/kv/k", `{"value":"v"}`)
	if w.Code != 500 || decodeError(t, w).Code != slotstore.CodeInternal {
		t.Fatalf("status %d body %s", w.Code, w.Body)
	}
}

// TestDesignListsEveryCode (issue 53: docs that cannot drift): docs/design.md
// §10 lists every error code with the status the table gives it, in its
// form "`code` [/ `code`]… STATUS".
func TestDesignListsEveryCode(t *testing.T) {
	b, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## 10. Errors")
	if start < 0 {
		t.Fatal("docs/design.md has no §10 Errors")
	}
	sec := doc[start+1:]
	if end := strings.Index(sec, "\n## "); end >= 0 {
		sec = sec[:end]
	}
	sec = strings.Join(strings.Fields(sec), " ") // line breaks as spaces
	status := regexp.MustCompile(`^(?: / ` + "`" + `[a-z_]+` + "`" + `)* (\d{3})\b`)
	for _, c := range allCodes {
		at := strings.Index(sec, "`"+string(c.code)+"`")
		if at < 0 {
			t.Errorf("§10 does not list %s", c.code)
			continue
		}
		m := status.FindStringSubmatch(sec[at+len(c.code)+2:])
		if m == nil || m[1] != strconv.Itoa(c.status) {
			t.Errorf("§10 gives %s the status %v, the table %d", c.code, m, c.status)
		}
	}
}
