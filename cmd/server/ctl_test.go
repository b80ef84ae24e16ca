package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestCtlThroughTheBinary: `slotmeta ctl …` of the real binary is
// dispatched to package ctl (not parsed as a node's flags) and reaches a
// real node; its exit codes reach the shell.
func TestCtlThroughTheBinary(t *testing.T) {
	p := startProc(t, procConfig{dataDir: t.TempDir(), api: freePort(t), raft: freePort(t)})
	ctl := func(args ...string) (code int, stdout, stderr string) {
		return runBin(t, []string{"SLOTMETA_ENDPOINTS=" + p.api}, append([]string{"ctl"}, args...)...)
	}
	// Readiness does not wait for every group's leader: a put may answer
	// the retryable 503 (exit 5) for a moment.
	var kv client.KV
	testutil.WaitFor(t, 15*time.Second, 50*time.Millisecond, func() (bool, string) {
		code, stdout, stderr := ctl("kv", "put", "feature.flags", "on", "-o", "json")
		if code == 0 && json.Unmarshal([]byte(stdout), &kv) == nil {
			return true, ""
		}
		if code != 5 {
			t.Fatalf("kv put: exit %d\n%s%s", code, stdout, stderr)
		}
		return false, fmt.Sprintf("exit %d: %s", code, stderr)
	})
	if kv.Key != "feature.flags" || kv.Value != "on" || kv.Revision < 1 {
		t.Fatalf("kv put: %+v", kv)
	}
	if code, stdout, stderr := ctl("kv", "get", "feature.flags"); code != 0 || !strings.Contains(stdout, "feature.flags  on") {
		t.Fatalf("kv get: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := ctl("kv", "get", "no.such.key"); code != 3 || !strings.HasPrefix(stderr, "error: not_found: ") {
		t.Fatalf("kv get of a missing key: exit %d, %q", code, stderr)
	}
	if code, _, stderr := ctl("kv", "get"); code != 2 || !strings.Contains(stderr, "missing KEY") {
		t.Fatalf("kv get without a key: exit %d, %q", code, stderr)
	}
	if code, stdout, _ := ctl("-h"); code != 0 || !strings.Contains(stdout, "cluster status") {
		t.Fatalf("ctl -h: exit %d\n%s", code, stdout)
	}
}

// TestSubcommandDispatch: cert and ctl are tools, run by subcommand; any
// other first argument is a node's flags.
func TestSubcommandDispatch(t *testing.T) {
	var out, errOut bytes.Buffer
	env := func(string) string { return "" }
	if code, ok := subcommand([]string{"ctl", "--help"}, env, &out, &errOut); !ok || code != 0 || !strings.Contains(out.String(), "kv put KEY VALUE") {
		t.Fatalf("ctl --help: %v %d\n%s%s", ok, code, out.String(), errOut.String())
	}
	if code, ok := subcommand([]string{"cert", "--help"}, env, &out, &errOut); !ok || code != 0 {
		t.Fatalf("cert --help: %v %d", ok, code)
	}
	for _, args := range [][]string{nil, {"--node-id", "2"}, {"--help"}} {
		if _, ok := subcommand(args, env, &out, &errOut); ok {
			t.Fatalf("%q taken for a subcommand", args)
		}
	}
}

// runBin runs the real binary with args (and env added to the test's) to
// its end: its exit code, stdout and stderr.
func runBin(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(serverBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}
