package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestReadRowsAcrossGroups: a node reads a batch's parts of many groups in
// one call — the groups it leads, those it follows (their read index asked
// of the leader's node) and those it holds no replica of (asked of a node
// that does) — and every part answers as a read of its own would: a key
// written through another node just before is found (linearizable), a key
// never written is missing, a key sent to a group that does not own its
// slot is wrong group. Four nodes, four groups of three replicas: every
// node lacks a replica of some group.
func TestReadRowsAcrossGroups(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 4, Groups: 4, ReplicationFactor: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	snap := c.Nodes[0].Routes()
	tbl := snap.Table()
	// Three keys a group: one written through a node other than the one
	// that reads, one read as another group's, one never written.
	keys := map[slotstore.GroupID][]string{}
	for i := 0; len(keys) < 4 || func() bool {
		for _, k := range keys {
			if len(k) < 3 {
				return true
			}
		}
		return false
	}(); i++ {
		k := fmt.Sprintf("rows-%d", i)
		g := tbl.Group(slotstore.HashSlotOfString(k))
		if len(keys[g]) < 3 {
			keys[g] = append(keys[g], k)
		}
	}
	for reader := range c.Nodes {
		writer := c.Nodes[(reader+1)%len(c.Nodes)]
		var qs []*meta.GetRows
		var want [][]string // the value each key of each part should have ("" missing)
		heldHere, notHere := 0, 0
		for g := slotstore.GroupID(1); g <= 4; g++ {
			if _, ok := c.Nodes[reader].Controller().Groups[g].Peers[slotstore.NodeID(reader+1)]; ok {
				heldHere++
			} else {
				notHere++
			}
			written := fmt.Sprintf("%s-by-%d", keys[g][0], reader)
			for {
				res, _, err := writer.Propose(ctx, &meta.PutKV{Key: keys[g][0], Value: []byte(written)})
				if err == nil && res.OK() {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("put %s: %v %v", keys[g][0], err, res.Err())
				}
			}
			other := keys[g%4+1][1] // a key of another group's slot
			qs = append(qs, &meta.GetRows{HashSlot: slotstore.HashSlotOfString(keys[g][0]), Table: meta.TableKV,
				Keys: []meta.RowRef{{Key: keys[g][0]}, {Key: keys[g][2]}, {Key: other}}})
			want = append(want, []string{written, "", "wrong"})
		}
		if heldHere == 0 || notHere == 0 {
			t.Fatalf("node %d holds %d of the groups: the test wants some held and some not", reader+1, heldHere)
		}
		answers := c.Nodes[reader].ReadRows(ctx, qs, meta.Linearizable)
		if len(answers) != len(qs) {
			t.Fatalf("node %d: %d answers for %d parts", reader+1, len(answers), len(qs))
		}
		for p, a := range answers {
			if a.Err != nil {
				t.Fatalf("node %d part %d: %v", reader+1, p, a.Err)
			}
			for j, it := range a.Batch.Items {
				k := qs[p].Keys[j].Key
				switch w := want[p][j]; {
				case w == "wrong" && it.State != meta.BatchWrongGroup:
					t.Fatalf("node %d: key %s of another group answered %+v", reader+1, k, it)
				case w == "" && it.State != meta.BatchMissing:
					t.Fatalf("node %d: key %s never written answered %+v", reader+1, k, it)
				case w != "" && w != "wrong":
					kv, err := meta.DecodeKV(it.Row)
					if it.State != meta.BatchFound || err != nil || string(kv.Value) != w {
						t.Fatalf("node %d: key %s answered %+v %v, want %q (written just before through another node)", reader+1, k, kv, err, w)
					}
				}
			}
		}
		// A local read of the same parts answers from this node's replicas
		// where it has them, from another node's where not.
		for p, a := range c.Nodes[reader].ReadRows(ctx, qs, meta.Local) {
			if a.Err != nil || len(a.Batch.Items) != len(qs[p].Keys) {
				t.Fatalf("node %d part %d, local: %+v", reader+1, p, a)
			}
		}
	}
}
