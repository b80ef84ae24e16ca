package certs

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// run runs the CLI and returns its exit code and outputs.
func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunUsage(t *testing.T) {
	commands := []string{"create-ca", "create-node", "create-client", "list"}
	for _, c := range []struct {
		args     []string
		code     int
		toStdout bool
	}{
		{nil, 2, false},
		{[]string{"-h"}, 0, true},
		{[]string{"--help"}, 0, true},
		{[]string{"help"}, 0, true},
		{[]string{"frobnicate"}, 2, false},
	} {
		code, stdout, stderr := run(c.args...)
		text := stderr
		if c.toStdout {
			text = stdout
		}
		if code != c.code {
			t.Errorf("%q: exit %d, want %d", c.args, code, c.code)
		}
		for _, cmd := range commands {
			if !strings.Contains(text, cmd) {
				t.Errorf("%q: usage does not list %s:\n%s", c.args, cmd, text)
			}
		}
	}
	if _, _, stderr := run("frobnicate"); !strings.HasPrefix(stderr, `slotmeta cert: unknown command "frobnicate"`) {
		t.Errorf("unknown command: %s", stderr)
	}
	// -h of a command: its flags, on stdout.
	code, stdout, _ := run("create-node", "-h")
	if code != 0 || !strings.Contains(stdout, "usage: slotmeta cert create-node --host H") || !strings.Contains(stdout, "-ca-key") {
		t.Errorf("create-node -h: exit %d\n%s", code, stdout)
	}
}

func TestRunCreateAndList(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	ok := func(want string, args ...string) {
		t.Helper()
		code, stdout, stderr := run(args...)
		if code != 0 || stderr != "" || stdout != want {
			t.Errorf("%q: exit %d\nstdout: %q\nwant:   %q\nstderr: %s", args, code, stdout, want, stderr)
		}
	}
	ok("wrote "+dir+"/ca.crt\nwrote "+dir+"/ca.key\n", "create-ca", "--certs-dir", dir, "--lifetime", "30d")
	ok("wrote "+dir+"/node.crt\nwrote "+dir+"/node.key\n",
		"create-node", "--host", "localhost, 127.0.0.1", "--certs-dir="+dir, "--host", "node1.example", "--lifetime", "240h")
	ok("wrote "+dir+"/client.root.crt\nwrote "+dir+"/client.root.key\n", "create-client", "root", "--certs-dir", dir)
	ok("wrote "+dir+"/client.ops.crt\nwrote "+dir+"/client.ops.key\n", "create-client", "--certs-dir", dir, "ops", "--lifetime", "1d")

	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	if got := ca.NotAfter.Sub(ca.NotBefore); got != 30*24*time.Hour+time.Hour {
		t.Errorf("CA lifetime %v", got)
	}
	node := readCert(t, filepath.Join(dir, "node.crt"))
	if !slices.Equal(node.DNSNames, []string{"localhost", "node1.example"}) || len(node.IPAddresses) != 1 {
		t.Errorf("node SANs %v %v", node.DNSNames, node.IPAddresses)
	}
	if got := node.NotAfter.Sub(node.NotBefore); got != 241*time.Hour {
		t.Errorf("node lifetime %v", got)
	}

	code, stdout, stderr := run("list", "--certs-dir", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("list: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "FILE") {
		t.Fatalf("list:\n%s", stdout)
	}
	for i, prefix := range []string{"ca.crt", "client.ops.crt", "client.root.crt", "node.crt"} {
		if !strings.HasPrefix(lines[i+1], prefix+" ") {
			t.Errorf("row %d: %q, want %s", i+1, lines[i+1], prefix)
		}
	}
	// 240h, less the time since its creation, rounded down.
	if !strings.Contains(lines[4], "localhost,node1.example,127.0.0.1") || !strings.Contains(lines[4], "(in 9 days)") {
		t.Errorf("node row: %q", lines[4])
	}
	if !strings.Contains(lines[2], "(in 23 hours)") {
		t.Errorf("ops row: %q", lines[2])
	}

	// The CA key elsewhere.
	keyDir := t.TempDir()
	if err := os.Rename(filepath.Join(dir, "ca.key"), filepath.Join(keyDir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	ok("wrote "+dir+"/client.far.crt\nwrote "+dir+"/client.far.key\n", "create-client", "far", "--certs-dir", dir, "--ca-key", filepath.Join(keyDir, "ca.key"))
	code, _, stderr = run("create-client", "near", "--certs-dir", dir)
	if code != 1 || !strings.HasPrefix(stderr, "slotmeta cert: reading key: ") || !strings.Contains(stderr, "no such file") {
		t.Errorf("without the CA key: exit %d: %s", code, stderr)
	}
	os.Rename(filepath.Join(keyDir, "ca.key"), filepath.Join(dir, "ca.key"))

	// Overwriting.
	code, _, stderr = run("create-node", "--host", "localhost", "--certs-dir", dir)
	if code != 1 || !strings.HasPrefix(stderr, "slotmeta cert: "+dir+"/node.crt: file already exists") {
		t.Errorf("over node.crt: exit %d: %s", code, stderr)
	}
	ok("wrote "+dir+"/node.crt\nwrote "+dir+"/node.key\n", "create-node", "--overwrite", "--host", "localhost", "--certs-dir", dir)
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run("create-ca", "--certs-dir", dir); code != 0 {
		t.Fatal(stderr)
	}
	for _, c := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"create-ca", "--certs-dir", dir}, 1, "slotmeta cert: " + dir + "/ca.crt: file already exists"},
		{[]string{"create-ca", "--lifetime", "soon", "--certs-dir", dir}, 2, `invalid value "soon" for flag -lifetime`},
		{[]string{"create-ca", "--lifetime", "-1h", "--certs-dir", dir}, 2, "must be positive"},
		{[]string{"create-ca", "--lifetime", "99999999999999d", "--certs-dir", dir}, 2, "not a number of days"},
		{[]string{"create-ca", "--certs-dir", dir, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"create-ca", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"create-node", "--certs-dir", dir}, 2, "slotmeta cert create-node: --host is required"},
		{[]string{"create-node", "--host", "a,,b", "--certs-dir", dir}, 2, `empty host in "a,,b"`},
		{[]string{"create-node", "--host", "10.0.0.1:9080", "--certs-dir", dir}, 1, `slotmeta cert: host "10.0.0.1:9080" has a port`},
		{[]string{"create-node", "--host", "localhost", "--certs-dir", filepath.Join(dir, "none")}, 1, "slotmeta cert: reading key: "},
		{[]string{"create-client", "--certs-dir", dir}, 2, "slotmeta cert create-client: missing NAME"},
		{[]string{"create-client", "a", "b", "--certs-dir", dir}, 2, `unexpected argument "b"`},
		{[]string{"create-client", "--certs-dir", dir, "--", "-x"}, 1, `client name "-x"`},
		{[]string{"create-client", "../evil", "--certs-dir", dir}, 1, `slotmeta cert: client name "../evil"`},
		{[]string{"list", "--certs-dir", filepath.Join(dir, "none")}, 1, "slotmeta cert: listing certificates: "},
		{[]string{"list", "now"}, 2, `unexpected argument "now"`},
	} {
		code, stdout, stderr := run(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%q: exit %d (want %d)\nstdout: %s\nstderr: %s\nwant in stderr: %s", c.args, code, c.code, stdout, stderr, c.want)
		}
		if c.code == 2 && !strings.Contains(stderr, "usage: slotmeta cert "+c.args[0]) {
			t.Errorf("%q: no usage on stderr:\n%s", c.args, stderr)
		}
	}
}

func TestRunDefaultCertsDir(t *testing.T) {
	t.Chdir(t.TempDir())
	if code, stdout, stderr := run("create-ca"); code != 0 || stdout != "wrote certs/ca.crt\nwrote certs/ca.key\n" {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := run("create-node", "--host", "localhost"); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := NewReloader(NodeFiles("certs")); err != nil {
		t.Error(err)
	}
}
