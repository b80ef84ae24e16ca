package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOptionsFlagsAndEnv(t *testing.T) {
	env := map[string]string{"SLOTMETA_NODE_ID": "7", "SLOTMETA_GROUPS": "16", "SLOTMETA_RTT": "20ms"}
	o, err := parseOptions([]string{"--groups", "4"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if o.NodeID != 7 || o.Groups != 4 || o.RTT != 20*time.Millisecond || o.APIAddr != "127.0.0.1:8080" {
		t.Fatalf("flags must win over env, env over defaults: %+v", o)
	}
	if _, err := parseOptions(nil, func(k string) string {
		if k == "SLOTMETA_GROUPS" {
			return "many"
		}
		return ""
	}); err == nil {
		t.Fatal("a malformed env value was accepted")
	}
}

func TestMembers(t *testing.T) {
	o := &options{NodeID: 1, RaftAddr: "127.0.0.1:9080", APIAddr: "127.0.0.1:8080"}
	m, err := o.members()
	if err != nil || len(m) != 1 || m[0].ID != 1 || m[0].RaftAddr != "127.0.0.1:9080" {
		t.Fatalf("default members: %+v %v", m, err)
	}
	o.InitialMembers = "1=127.0.0.1:9081/127.0.0.1:8081/127.0.0.1:9181, 2=127.0.0.1:9082"
	m, err = o.members()
	if err != nil || len(m) != 2 || m[0].APIAddr != "127.0.0.1:8081" || m[1].ID != 2 || m[1].APIAddr != "" {
		t.Fatalf("parsed members: %+v %v", m, err)
	}
	for _, bad := range []string{"x=127.0.0.1:1", "1", "0=127.0.0.1:1", "1=nohostport", "1=a:1/b:2/c:3/d:4"} {
		o.InitialMembers = bad
		if _, err := o.members(); err == nil {
			t.Fatalf("%q was accepted", bad)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "localhost:1": true, "[::1]:80": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.1:80": false, "bogus": false} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v", addr, got)
		}
	}
}

func TestSecretAndJoin(t *testing.T) {
	o := &options{RaftAddr: "127.0.0.1:1", PeerAddr: "127.0.0.1:2", APIAddr: "127.0.0.1:3"}
	if s, err := o.secret(); err != nil || s != "" {
		t.Fatalf("loopback without a secret: %q %v (want none: a generated one)", s, err)
	}
	o.PeerAddr = "10.1.2.3:9180"
	if _, err := o.secret(); err == nil {
		t.Fatal("a non-loopback peer address was allowed without a secret")
	}
	o.ClusterSecret = "s3cret"
	if _, err := o.secret(); err == nil {
		t.Fatal("a 6-byte cluster secret was accepted")
	}
	o.ClusterSecret = "s3cret-0123456789"
	if s, err := o.secret(); err != nil || s != "s3cret-0123456789" {
		t.Fatalf("explicit secret: %q %v", s, err)
	}
	o.Join = "127.0.0.1:8081"
	if m, err := o.members(); err != nil || m != nil {
		t.Fatalf("a joining node founds nothing: %v %v", m, err)
	}
	o.InitialMembers = "1=127.0.0.1:9081"
	if _, err := o.members(); err == nil {
		t.Fatal("--join with --initial-members was accepted")
	}
}

func TestNoTokensMeansLoopbackOnly(t *testing.T) {
	err := run([]string{"--api-addr", "0.0.0.0:0", "--data-dir", t.TempDir()}, func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("a public API address without tokens: %v", err)
	}
}

func TestAuthenticatorFromFileAndEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("admin admin-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := &options{TokensFile: path}
	a, err := o.authenticator(func(k string) string {
		if k == "SLOTMETA_TOKENS" {
			return "read:read-token-0123456789"
		}
		return ""
	})
	if err != nil || !a.Enabled() || a.RoleOf("admin-token-0123456789").String() != "admin" || a.RoleOf("read-token-0123456789").String() != "read" {
		t.Fatalf("tokens from file and env: %v", err)
	}
	if _, err := (&options{TokensFile: path + "-missing"}).authenticator(func(string) string { return "" }); err == nil {
		t.Fatal("a missing tokens file was accepted")
	}
}

func TestTLSOptionsFromFlagsAndEnv(t *testing.T) {
	env := map[string]string{"SLOTMETA_TLS_CA": "/etc/slotmeta/ca.pem", "SLOTMETA_TLS_CERT": "/env/node.pem", "SLOTMETA_TLS_KEY": "/etc/slotmeta/node-key.pem"}
	o, err := parseOptions([]string{"--tls-cert", "/flag/node.pem"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if o.TLSCA != "/etc/slotmeta/ca.pem" || o.TLSCert != "/flag/node.pem" || o.TLSKey != "/etc/slotmeta/node-key.pem" {
		t.Fatalf("TLS options: %+v", o)
	}
	// A partial TLS configuration is refused before anything starts.
	err = run([]string{"--data-dir", t.TempDir(), "--tls-ca", "/etc/slotmeta/ca.pem"}, func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "missing: certificate file, key file") {
		t.Fatalf("--tls-ca alone: %v", err)
	}
}

// TestJoinToken: --join-token wins; else a joining node uses the first admin
// token of its own tokens (nodes share the tokens file); a founding node and
// a node without admin tokens send none.
func TestJoinToken(t *testing.T) {
	env := map[string]string{"SLOTMETA_TOKENS": "read:r1,admin:zz-admin,admin:aa-admin,write:w1"}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		o    options
		want string
	}{
		{options{Join: "127.0.0.1:8080", JoinToken: "given"}, "given"},
		{options{Join: "127.0.0.1:8080"}, "aa-admin"},
		{options{}, ""},
	}
	for _, c := range cases {
		if got, err := c.o.joinToken(getenv); err != nil || got != c.want {
			t.Fatalf("%+v: %q %v, want %q", c.o, got, err, c.want)
		}
	}
	env["SLOTMETA_TOKENS"] = "read:r1"
	if got, _ := (&options{Join: "127.0.0.1:8080"}).joinToken(getenv); got != "" {
		t.Fatalf("no admin token: %q", got)
	}
}

func TestAServeFailureIsAnError(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	serveErr := make(chan error, 1)
	serveErr <- errors.New("accept: too many open files")
	noReload := func() error { return nil }
	if err := awaitStop(log, make(chan os.Signal), make(chan os.Signal), serveErr, noReload); err == nil || !strings.Contains(err.Error(), "too many open files") {
		t.Fatalf("a server that died: %v, want its error (the process exits non-zero)", err)
	}
	// SIGHUP reloads (a failed reload is logged, the node runs on); SIGTERM stops.
	hup, sig := make(chan os.Signal, 1), make(chan os.Signal)
	hup <- syscall.SIGHUP
	reloads := 0
	reload := func() error {
		reloads++
		go func() { sig <- syscall.SIGTERM }() // only after the reload: the select cannot pick it first
		return errors.New("bad tokens file")
	}
	if err := awaitStop(log, sig, hup, make(chan error), reload); err != nil || reloads != 1 {
		t.Fatalf("a stop on request: %v (reloads %d)", err, reloads)
	}
}

// TestHelpAndVersion: -h and --help are answered with the usage, which names
// the subcommands, and are no error to the shell (main exits 0 on
// flag.ErrHelp); --version prints the version and runs nothing.
func TestHelpAndVersion(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		var err error
		usage := stderrOf(t, func() { _, err = parseOptions([]string{arg}, func(string) string { return "" }) })
		if !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%s: %v, want flag.ErrHelp", arg, err)
		}
		for _, sub := range []string{"slotmeta cert <command>", "slotmeta ctl <noun> <verb>", "-api-addr"} {
			if !strings.Contains(usage, sub) {
				t.Fatalf("%s: the usage does not list %q:\n%s", arg, sub, usage)
			}
		}
	}
	var out bytes.Buffer
	if err := run([]string{"--version"}, func(string) string { return "" }, &out); err != nil || !strings.HasPrefix(out.String(), "slotmeta ") {
		t.Fatalf("--version: %q %v", out.String(), err)
	}
}

// stderrOf returns what f writes to os.Stderr (the flag package's usage
// goes there).
func stderrOf(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	f()
	os.Stderr = saved
	w.Close()
	return <-done
}
