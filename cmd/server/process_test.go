package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

// serverBin is the real binary, built once per test run by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "slotmeta-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "slotmeta")
	args := []string{"build", "-o", serverBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build server:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freePort(t *testing.T) string { return testutil.FreeAddr(t) }

// proc is one server process started by a test; only it is ever signalled.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	api  string
	log  *bytes.Buffer
	done chan error
}

type procConfig struct {
	dataDir, api, raft string
	extra              []string
}

func startProc(t *testing.T, pc procConfig) *proc {
	t.Helper()
	args := []string{"--data-dir", pc.dataDir, "--api-addr", pc.api, "--raft-addr", pc.raft,
		"--peer-addr", freePort(t), "--rtt", "10ms", "--groups", "4", "--log-level", "warn"}
	cmd := exec.Command(serverBin, append(args, pc.extra...)...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, api: "http://" + pc.api, log: &log, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	p.waitReady()
	return p
}

func (p *proc) waitReady() {
	p.t.Helper()
	state, ok := testutil.Eventually(60*time.Second, 20*time.Millisecond, func() (bool, string) {
		select {
		case err := <-p.done:
			p.t.Fatalf("server exited before ready: %v\n%s", err, p.log.String())
		default:
		}
		resp, err := http.Get(p.api + "/readyz")
		if err != nil {
			return false, fmt.Sprintf("readyz: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("readyz: %d", resp.StatusCode)
	})
	if !ok {
		p.t.Fatalf("server not ready within 60s (last %s)\n%s", state, p.log.String())
	}
}

// stop sends sig and waits for the process to exit.
func (p *proc) stop(sig syscall.Signal) error {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		p.t.Fatalf("server did not exit after %v\n%s", sig, p.log.String())
		return nil
	}
}

func (p *proc) do(method, path, body string, headers ...string) (int, []byte) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.api+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestAcknowledgedWritesSurviveRestartAndKill: every write answered 2xx is
// readable after a graceful restart and after kill -9 of the real binary.
func TestAcknowledgedWritesSurviveRestartAndKill(t *testing.T) {
	pc := procConfig{dataDir: t.TempDir(), api: freePort(t), raft: freePort(t)}
	p := startProc(t, pc)

	acked := map[string]string{} // kv key → value answered 2xx
	users := map[string]bool{}
	write := func(round, n int) {
		for i := 0; i < n; i++ {
			key := fmt.Sprintf("k-%d-%d", round, i)
			val := fmt.Sprintf("v-%d-%d", round, i)
			if code, body := p.do("PUT", "/v1/kv/"+key, fmt.Sprintf(`{"value":%q}`, val)); code == 200 {
				acked[key] = val
			} else {
				t.Fatalf("PUT %s: %d %s", key, code, body)
			}
			uid := fmt.Sprintf("u-%d-%d", round, i)
			if code, body := p.do("POST", "/v1/users", fmt.Sprintf(`{"uid":%q,"name":"n%d"}`, uid, i)); code == 201 {
				users[uid] = true
			} else {
				t.Fatalf("POST user %s: %d %s", uid, code, body)
			}
		}
	}
	// get reads path, waiting out the retryable 503 of a group that has
	// not elected its leader yet since the restart (readiness does not wait
	// for every group), within a bound.
	get := func(path string) (code int, body []byte) {
		testutil.WaitFor(t, 10*time.Second, 20*time.Millisecond, func() (bool, string) {
			code, body = p.do("GET", path, "")
			return code != 503 || !bytes.Contains(body, []byte(`"retryable":true`)), fmt.Sprintf("GET %s: %d %s", path, code, body)
		})
		return code, body
	}
	check := func(stage string) {
		for k, v := range acked {
			code, body := get("/v1/kv/" + k)
			var got struct{ Value string }
			_ = json.Unmarshal(body, &got)
			if code != 200 || got.Value != v {
				t.Fatalf("%s: GET %s = %d %s, want %q", stage, k, code, body, v)
			}
		}
		for uid := range users {
			if code, body := get("/v1/users/" + uid); code != 200 {
				t.Fatalf("%s: GET user %s = %d %s", stage, uid, code, body)
			}
		}
	}

	write(1, 40)
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("graceful shutdown exited with %v\n%s", err, p.log.String())
	}
	p = startProc(t, pc)
	check("after graceful restart")

	write(2, 40)
	_ = p.stop(syscall.SIGKILL)
	p = startProc(t, pc)
	check("after kill -9")

	// And the process keeps serving writes afterwards.
	write(3, 5)
	check("after writes following recovery")
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("graceful shutdown exited with %v", err)
	}
}
