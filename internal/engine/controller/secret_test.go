package controller

import (
	"strings"
	"testing"
)

// A bootstrap's generated secret becomes the state's; a later one is
// given only to a cluster without one, and the first one stays.
func TestPeerSecret(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, MinPeerSecretBytes) }
	s := NewStateMachine(nil)
	if r := update(t, s, 1, encode(t, Command{PeerSecret: &SetPeerSecret{Secret: long("a")}})); r.OK {
		t.Fatal("a secret was set before the bootstrap")
	}
	update(t, s, 2, bootstrapCmd(t, 3, 3, 3))
	if got := s.Snapshot().PeerSecret; got != "" {
		t.Fatalf("bootstrap without a secret left %q", got)
	}
	if r := update(t, s, 3, encode(t, Command{PeerSecret: &SetPeerSecret{Secret: "short"}})); r.OK {
		t.Fatal("a short secret was accepted")
	}
	update(t, s, 4, encode(t, Command{PeerSecret: &SetPeerSecret{Secret: long("b")}}))
	update(t, s, 5, encode(t, Command{PeerSecret: &SetPeerSecret{Secret: long("c")}}))
	if got := s.Snapshot().PeerSecret; got != long("b") {
		t.Fatalf("secret %q, want the first one given", got)
	}

	s2 := NewStateMachine(nil)
	b := &Bootstrap{ClusterID: "c1", GroupCount: 1, ReplicationFactor: 1, Nodes: []Node{{ID: 1, RaftAddr: "127.0.0.1:9001"}}, PeerSecret: long("d")}
	if r := update(t, s2, 1, encode(t, Command{Bootstrap: b})); !r.OK {
		t.Fatalf("bootstrap: %+v", r)
	}
	if got := s2.Snapshot().PeerSecret; got != long("d") {
		t.Fatalf("bootstrap's secret: %q", got)
	}
	b.PeerSecret = "short"
	if b.Validate() == nil {
		t.Fatal("a bootstrap with a short secret validated")
	}
}
