package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slotmeta/slotmeta"
	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// run runs the tool with env as the whole environment and returns its exit
// code and outputs.
func run(env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

// counting is a server that counts the requests it gets, answering each
// with answer.
func counting(t *testing.T, answer http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		answer(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &n
}

// TestUsageErrorsSendNothing: a bad flag, a missing or extra argument, a
// bad value exits 2 with the complaint on stderr, and no request is sent.
func TestUsageErrorsSendNothing(t *testing.T) {
	ts, requests := counting(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	env := map[string]string{"SLOTMETA_ENDPOINTS": ts.URL}
	for _, args := range [][]string{
		{},
		{"--bogus", "kv", "get", "k"},
		{"frobnicate"},
		{"kv"},
		{"kv", "frobnicate"},
		{"kv", "get"},
		{"kv", "get", "a", "b"},
		{"kv", "get", "k", "--consistency", "eventual"},
		{"kv", "put", "k"},
		{"kv", "put", "k", "v", "--if-match", "0"},
		{"kv", "put", "k", "v", "--if-match", "x"},
		{"kv", "put", "k", "v", "--if-match", "3", "--if-absent"},
		{"kv", "put", "k", "v", "--idempotency-key", "bad\tkey"},
		{"kv", "batch-get"},
		{"kv", "batch-write", "put", "k"},
		{"kv", "batch-write", "upsert", "k", "v"},
		{"kv", "batch-write", "--file", "/nonexistent/ops.json"},
		{"user", "put", "u1", "--extra", "{not json"},
		{"channel", "get", "0", "c1"},
		{"channel", "get", "256", "c1"},
		{"subscriber", "add", "2", "c1"},
		{"node", "drain", "-1"},
		{"group", "get", "4294967296"},
		{"leader", "transfer", "1"},
		{"replica", "move", "1", "--from", "1"},
		{"task", "get", "x"},
		{"audit", "--limit", "0"},
		{"-o", "yaml", "cluster", "status"},
		{"cluster", "status", "--timeout", "0s"},
		{"cluster", "status", "--endpoints", "ftp://x"},
		{"cluster", "status", "--cert", "c.pem", "--key", "k.pem"},
		{"cluster", "status", "--cacert", "/nonexistent/ca.crt"},
	} {
		code, stdout, stderr := run(env, args...)
		if code != exitUsage || stderr == "" || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and a complaint on stderr", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := run(map[string]string{"SLOTMETA_TIMEOUT": "soon"}, "cluster", "status"); code != exitUsage || !strings.Contains(stderr, "SLOTMETA_TIMEOUT") {
		t.Errorf("a bad SLOTMETA_TIMEOUT: exit %d, %q", code, stderr)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests sent by usage errors", n)
	}
}

// TestHelp: -h, --help and help at every level exit 0 with the usage on
// stdout, listing the commands (and at a command, its flags).
func TestHelp(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-h"}, []string{"kv get KEY", "subscriber add TYPE ID UID...", "leader transfer GROUP NODE", "replica move", "audit", "-endpoints", "Exit codes"}},
		{[]string{"--help"}, []string{"cluster status", "route resolve KEY..."}},
		{[]string{"help"}, []string{"task cancel ID"}},
		{[]string{"kv", "-h"}, []string{"kv batch-write", "kv delete KEY"}},
		{[]string{"node", "help"}, []string{"node drain ID", "node drain-status"}},
		{[]string{"kv", "put", "-h"}, []string{"usage: slotmeta ctl kv put KEY VALUE", "-if-match", "-idempotency-key", "-token"}},
		{[]string{"-o", "json", "audit", "--help"}, []string{"-limit", "-before"}},
	} {
		code, stdout, stderr := run(nil, c.args...)
		if code != exitOK || stderr != "" {
			t.Errorf("%q: exit %d, stderr %q", c.args, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q: usage lacks %q:\n%s", c.args, w, stdout)
			}
		}
	}
}

// TestEveryErrorCodeHasAnExitCode: the table covers every code of the
// spec's ErrorCode, so a new code is mapped on purpose, not by accident.
func TestEveryErrorCodeHasAnExitCode(t *testing.T) {
	var spec struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `yaml:"enum"`
				} `yaml:"ErrorCode"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(slotmeta.OpenAPI, &spec); err != nil {
		t.Fatal(err)
	}
	codes := spec.Components.Schemas.ErrorCode.Enum
	if len(codes) < 20 {
		t.Fatalf("read %d error codes from openapi.yaml", len(codes))
	}
	for _, code := range codes {
		if _, ok := exitCodes[client.ErrorCode(code)]; !ok {
			t.Errorf("error code %s has no exit code in exitCodes", code)
		}
	}
	for code, want := range map[client.ErrorCode]int{
		client.ErrorCodeNotFound: 3, client.ErrorCodeFailedPrecondition: 4, client.ErrorCodeConflict: 4,
		client.ErrorCodeAborted: 4, client.ErrorCodeEpochStale: 4, client.ErrorCodeRouteNotReady: 5,
		client.ErrorCodeNotLeader: 5, client.ErrorCodeRateLimited: 5, client.ErrorCodeTimeout: 5,
		client.ErrorCodeUnauthenticated: 6, client.ErrorCodePermissionDenied: 6, client.ErrorCodeInternal: 1,
	} {
		if got := exitCodeOf(code, 0, false); got != want {
			t.Errorf("%s: exit %d, want %d", code, got, want)
		}
	}
	// A code this build does not know: by retryable, then by status.
	if exitCodeOf("new_code", 503, false) != 5 || exitCodeOf("new_code", 400, true) != 5 || exitCodeOf("new_code", 404, false) != 3 ||
		exitCodeOf("new_code", 500, false) != 1 {
		t.Error("unknown codes are not mapped by retryable and status")
	}
}

// TestNoAnswerInTimeIsRetryable: a node that does not answer within
// --timeout exits 5; one that cannot be reached at all exits 1; an answer
// that is no API answer (a proxy's page) exits 1, or 5 if it is a 503.
func TestNoAnswerInTimeIsRetryable(t *testing.T) {
	hang, _ := counting(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	start := time.Now()
	code, _, stderr := run(nil, "cluster", "status", "--endpoints", hang.URL, "--timeout", "300ms")
	if code != exitUnavailable || !strings.HasPrefix(stderr, "error: timeout: ") || time.Since(start) > 5*time.Second {
		t.Errorf("hanging node: exit %d after %v, %q", code, time.Since(start), stderr)
	}
	code, _, stderr = run(nil, "-o", "json", "kv", "put", "k", "v", "--endpoints", "http://"+testutil.FreeAddr(t))
	var eb client.ErrorBody
	if code != exitFailure || json.Unmarshal([]byte(stderr), &eb) != nil || eb.Error.Code != codeUnreachable {
		t.Errorf("closed port: exit %d, %q", code, stderr)
	}
	proxy, _ := counting(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	})
	if code, _, stderr := run(nil, "cluster", "status", "--endpoints", proxy.URL); code != exitFailure || !strings.Contains(stderr, "invalid_answer") {
		t.Errorf("a proxy's page: exit %d, %q", code, stderr)
	}
	busy, _ := counting(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) })
	if code, _, stderr := run(nil, "cluster", "status", "--endpoints", busy.URL); code != exitUnavailable {
		t.Errorf("a proxy's 503: exit %d, %q", code, stderr)
	}
}
