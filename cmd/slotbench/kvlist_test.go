package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestKVListFillsAndListsEveryKey: slotbench kvlist writes -fill keys over
// three real nodes and lists them, two listings at once, each of them
// every key once.
func TestKVListFillsAndListsEveryKey(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 4})
	var eps []string
	for _, s := range c.ServeAPIs() {
		eps = append(eps, s.URL)
	}
	var out bytes.Buffer
	if err := kvListCmd([]string{"-endpoints", strings.Join(eps, ","), "-prefix", "kl.", "-fill", "2500", "-c", "2", "-limit", "700", "-keys-only"},
		&out, io.Discard); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Count(got, ": 2500 keys in") != 2 || !strings.Contains(got, "5000 keys listed") {
		t.Fatalf("kvlist printed:\n%s", got)
	}
	if err := kvListCmd([]string{"-endpoints", "http://example.com:80"}, io.Discard, io.Discard); err == nil {
		t.Fatal("a non-loopback endpoint was accepted")
	}
}
