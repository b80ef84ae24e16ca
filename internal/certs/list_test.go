package certs

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestList(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	if err := CreateCA(dir, CAOptions{Now: clock}); err != nil {
		t.Fatal(err)
	}
	if err := CreateNode(dir, []string{"node1.example", "10.0.0.1"}, CertOptions{Now: clock}); err != nil {
		t.Fatal(err)
	}
	if err := CreateClient(dir, "root", CertOptions{Now: clock}); err != nil {
		t.Fatal(err)
	}
	// Not certificates: skipped.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o644)
	os.Mkdir(filepath.Join(dir, "old.crt"), 0o700)

	infos, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, in := range infos {
		files = append(files, in.File)
	}
	if !slices.Equal(files, []string{"ca.crt", "client.root.crt", "node.crt"}) {
		t.Fatalf("files %v", files)
	}
	ca, client, node := infos[0], infos[1], infos[2]
	if !ca.IsCA || ca.CommonName != "slotmeta CA" || len(ca.Usages) != 0 || ca.Issuer != "slotmeta CA" {
		t.Errorf("CA: %+v", ca)
	}
	if client.IsCA || client.CommonName != "root" || !slices.Equal(client.Usages, []string{"client"}) || client.Issuer != "slotmeta CA" {
		t.Errorf("client: %+v", client)
	}
	if !slices.Equal(node.Usages, []string{"server", "client"}) || !slices.Equal(node.Hosts, []string{"node1.example", "10.0.0.1"}) {
		t.Errorf("node: %+v", node)
	}
	if !node.NotBefore.Equal(now.Add(-time.Hour)) || !node.NotAfter.Equal(now.Add(DefaultNodeLifetime)) {
		t.Errorf("node validity %v to %v", node.NotBefore, node.NotAfter)
	}
	if want := readCert(t, filepath.Join(dir, "node.crt")).SerialNumber.Text(16); node.Serial != want {
		t.Errorf("serial %s, want %s", node.Serial, want)
	}

	var out bytes.Buffer
	if err := WriteList(&out, infos, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("table:\n%s", out.String())
	}
	for i, want := range []string{
		`^FILE +NAME +USAGE +HOSTS +EXPIRES$`,
		`^ca\.crt +slotmeta CA +ca +- +2040-05-29 \(in 3650 days\)$`,
		`^client\.root\.crt +root +client +- +2032-05-31 \(in 730 days\)$`,
		`^node\.crt +node +server,client +node1\.example,10\.0\.0\.1 +2035-05-31 \(in 1825 days\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(lines[i]) {
			t.Errorf("line %d: %q does not match %s", i, lines[i], want)
		}
	}
}

func TestListExpiredAndBundle(t *testing.T) {
	dir := t.TempDir()
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return past }
	if err := CreateCA(dir, CAOptions{Now: clock, Lifetime: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := CreateNode(dir, []string{"localhost"}, CertOptions{Now: clock, Lifetime: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	// A bundle of two CAs lists as two rows.
	other := newCA(t)
	os.WriteFile(filepath.Join(dir, "bundle.crt"), concat(t, filepath.Join(dir, "ca.crt"), filepath.Join(other, "ca.crt")), 0o644)

	infos, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 4 || infos[0].File != "bundle.crt" || infos[1].File != "bundle.crt" {
		t.Fatalf("infos %+v", infos)
	}
	var out bytes.Buffer
	WriteList(&out, infos, time.Now())
	table := out.String()
	if !regexp.MustCompile(`(?m)^node\.crt +node +server,client +localhost +2020-01-02 \(EXPIRED\)$`).MatchString(table) {
		t.Errorf("no expired node row:\n%s", table)
	}
	if !regexp.MustCompile(`(?m)^bundle\.crt .*\(in \d+ days\)$`).MatchString(table) {
		t.Errorf("no valid bundle row:\n%s", table)
	}
	if got := expires(infos[3], infos[3].NotBefore.Add(-time.Minute)); !strings.HasSuffix(got, "(NOT YET VALID)") {
		t.Errorf("before NotBefore: %s", got)
	}
	for left, want := range map[time.Duration]string{
		49 * time.Hour:   "(in 2 days)",
		25 * time.Hour:   "(in 1 day)",
		23 * time.Hour:   "(in 23 hours)",
		90 * time.Minute: "(in less than 2 hours)",
		time.Second:      "(in less than 2 hours)",
	} {
		in := Info{NotBefore: past, NotAfter: past.Add(1000 * time.Hour)}
		if got := expires(in, in.NotAfter.Add(-left)); !strings.HasSuffix(got, want) {
			t.Errorf("%v before expiry: %s, want %s", left, got, want)
		}
	}
}

func TestListErrors(t *testing.T) {
	if _, err := List(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.HasPrefix(err.Error(), "certs: ") {
		t.Errorf("missing directory: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "empty.crt"), nil, 0o644)
	if _, err := List(dir); err == nil || !strings.Contains(err.Error(), "empty.crt holds no PEM CERTIFICATE") {
		t.Errorf("empty .crt: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "empty.crt"), []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), 0o644)
	if _, err := List(dir); err == nil || !strings.Contains(err.Error(), "empty.crt: certificate 1") {
		t.Errorf("garbage .crt: %v", err)
	}
}

func TestWriteListCells(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	WriteList(&out, []Info{{File: "x.crt", CommonName: "evil\tname\nrow", NotBefore: now, NotAfter: now.Add(time.Hour)}}, now)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "evil?name?row") {
		t.Errorf("table:\n%s", out.String())
	}
}
