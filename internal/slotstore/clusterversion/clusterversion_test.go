package clusterversion_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

func v(s string) slotstore.Version {
	x, err := slotstore.ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return x
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{"0.1": "0.1", "v0.2.3": "0.2", " 1.10 ": "1.10"} {
		got, err := slotstore.ParseVersion(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1", "v1.x", "1.2.3.4", "-1.0", "70000.1"} {
		if _, err := slotstore.ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) took it", bad)
		}
	}
	var got struct{ V slotstore.Version }
	if err := json.Unmarshal([]byte(`{"V":"0.2"}`), &got); err != nil || got.V != v("0.2") {
		t.Fatalf("unmarshal: %v %v", got, err)
	}
	if b, _ := json.Marshal(struct{ V slotstore.Version }{}); string(b) != `{"V":""}` {
		t.Fatalf("the zero version marshals as %s", b)
	}
}

func TestGate(t *testing.T) {
	if err := clusterversion.Gate(slotstore.Version{}, clusterversion.StateChecks); slotstore.ErrorCode(err) != slotstore.CodeFailedPrecondition ||
		!strings.Contains(err.Error(), "state checks need cluster version 0.2; the cluster is at 0.1") {
		t.Fatalf("a cluster that records no version (0.1): %v", err)
	}
	if err := clusterversion.Gate(v("0.2"), clusterversion.StateChecks); err != nil {
		t.Fatalf("at 0.2: %v", err)
	}
	for _, f := range clusterversion.Features {
		if clusterversion.Binary.Less(f.Since) {
			t.Errorf("feature %q since %s is newer than the binary (%s)", f.Name, f.Since, clusterversion.Binary)
		}
	}
}

func TestNext(t *testing.T) {
	ids := []slotstore.NodeID{1, 2, 3}
	for _, tc := range []struct {
		name     string
		recorded slotstore.Version
		running  map[slotstore.NodeID]slotstore.Version
		want     string // "" stays
	}{
		{"mixed: one node still on 0.1 (reports none)", slotstore.Version{}, map[slotstore.NodeID]slotstore.Version{1: v("0.2"), 2: {}, 3: v("0.2")}, ""},
		{"one node not heard from", slotstore.Version{}, map[slotstore.NodeID]slotstore.Version{1: v("0.2"), 2: v("0.2")}, ""},
		{"every node on 0.2", slotstore.Version{}, map[slotstore.NodeID]slotstore.Version{1: v("0.2"), 2: v("0.2"), 3: v("0.2")}, "0.2"},
		{"already recorded", v("0.2"), map[slotstore.NodeID]slotstore.Version{1: v("0.2"), 2: v("0.2"), 3: v("0.2")}, ""},
		{"never lowered: a node went back to 0.1", v("0.2"), map[slotstore.NodeID]slotstore.Version{1: v("0.2"), 2: {}, 3: v("0.2")}, ""},
		{"never above the binary", slotstore.Version{}, map[slotstore.NodeID]slotstore.Version{1: v("9.0"), 2: v("9.0"), 3: v("9.0")}, clusterversion.Binary.String()},
	} {
		got, ok := clusterversion.Next(tc.recorded, ids, tc.running)
		if (tc.want == "") == ok || ok && got.String() != tc.want {
			t.Errorf("%s: Next = %v %v, want %q", tc.name, got, ok, tc.want)
		}
	}
}

func TestCanJoin(t *testing.T) {
	if err := clusterversion.CanJoin(v("0.2"), slotstore.Version{}); slotstore.ErrorCode(err) != slotstore.CodeFailedPrecondition ||
		!strings.Contains(err.Error(), "the node runs 0.1, older than the cluster version 0.2") {
		t.Fatalf("a 0.1 node into a 0.2 cluster: %v", err)
	}
	if err := clusterversion.CanJoin(slotstore.Version{}, v("0.2")); err != nil {
		t.Fatalf("a 0.2 node into a 0.1 cluster (a rolling upgrade): %v", err)
	}
}
