package faults

import (
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func TestFaultNetworkRules(t *testing.T) {
	n := NewNetwork()
	n.Register(1, "127.0.0.1:1001", "127.0.0.1:2001")
	n.Register(2, "127.0.0.1:1002")
	if n.NodeOf("127.0.0.1:2001") != 1 || n.NodeOf("127.0.0.1:9") != 0 {
		t.Fatal("address book")
	}
	type dir struct{ from, to slotstore.NodeID }
	expect := func(step string, cut ...dir) {
		t.Helper()
		want := map[dir]bool{}
		for _, d := range cut {
			want[d] = true
		}
		for from := slotstore.NodeID(0); from <= 5; from++ {
			for to := slotstore.NodeID(0); to <= 5; to++ {
				d := dir{from, to}
				if got := n.Cut(from, to); got != want[d] {
					t.Fatalf("%s: Cut(%d→%d)=%v, want %v", step, from, to, got, want[d])
				}
				if got := n.Deliver(from, to); got == want[d] {
					t.Fatalf("%s: Deliver(%d→%d)=%v", step, from, to, got)
				}
			}
		}
	}
	expect("empty")
	n.Isolate(3)
	expect("isolate 3", dir{3, 1}, dir{3, 2}, dir{3, 4}, dir{3, 5}, dir{1, 3}, dir{2, 3}, dir{4, 3}, dir{5, 3})
	n.Heal()
	n.Partition([]slotstore.NodeID{1, 2}, []slotstore.NodeID{3})
	expect("partition 12|3", dir{1, 3}, dir{2, 3}, dir{3, 1}, dir{3, 2})
	n.Heal()
	n.DropOneWay(1, 2)
	expect("one way 1→2", dir{1, 2})
	dropped := n.Dropped()
	n.Heal()
	expect("healed")
	if n.Dropped() != dropped {
		t.Fatal("a healed network dropped messages")
	}
}

func TestFaultNetworkLossIsSeeded(t *testing.T) {
	draw := func(seed uint64) (pattern []bool, delivered int) {
		n := NewNetwork()
		n.Lossy(1, 0, 0.3, seed) // 1 → anyone
		for range 2000 {
			ok := n.Deliver(1, 2)
			pattern = append(pattern, ok)
			if ok {
				delivered++
			}
			if !n.Deliver(2, 1) {
				t.Fatal("loss rule 1→any dropped 2→1")
			}
		}
		return pattern, delivered
	}
	a, delivered := draw(7)
	b, _ := draw(7)
	if delivered < 1200 || delivered > 1600 {
		t.Fatalf("delivered %d of 2000 at 30%% loss", delivered)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different draw at %d", i)
		}
	}
}
