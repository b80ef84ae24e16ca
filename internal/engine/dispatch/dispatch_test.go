package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestDispatchDataDriven runs the cases of testdata/forward (writes) and
// testdata/read (reads) against the harness (harness_test.go): what this
// node knows, what each call meets, and what the caller is answered. Every
// case starts afresh: node 2 leads group 1 at term 3, this node (1) holds
// no replica, at most 2 hint follows, a hop lasts 40ms, an old leader gets
// 30ms of grace after a move, a write waits at most 60ms for a new leader.
// Rewrite with `go test ./internal/engine/dispatch -run
// TestDispatchDataDriven -rewrite`.
//
// Directives:
//
//	propose [idem] [key=<k>]        a write (with an Idempotency-Key)
//	propose-to-group                a write addressed to group 1 itself
//	read [local]                    a linearizable (or local) read
//	read-rows [local]               a read of rows (ReadRows: one group's part)
//
// and, in any case, these lines before the steps:
//
//	leader <n>/<term>               what this node knows of group 1's leader (0: none;
//	                                an older term than the one known is ignored)
//	replica [leader-known]          this node holds a replica of group 1
//	disk-full                       this node's followers fall behind (Config.Behind)
//	heard <n>=<duration>            its replica last heard node n's that long ago
//	on-wake <n>/<term>              woken, the group elects node n (once)
//	hops <n> | leader-wait <d> | hop-timeout <d> | grace <d>
//
// The output is every call in order (with the step it took), then what
// the caller got; steps no call took are listed as unused.
func TestDispatchDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			h := newHarness(t)
			h.router.SetLeader(1, 2, 3)
			var steps []string
			for _, line := range strings.Split(d.Input, "\n") {
				f := strings.Fields(line)
				if len(f) == 0 {
					continue
				}
				switch f[0] {
				case "leader":
					n, term, _ := strings.Cut(f[1], "/")
					h.router.SetLeader(1, slotstore.NodeID(h.num(n)), h.num(term))
				case "replica":
					h.local.has = true
					h.local.leaderKnown = len(f) > 1 && f[1] == "leader-known"
				case "disk-full":
					h.cfg.Behind = func() bool { return true }
				case "heard":
					n, ago, _ := strings.Cut(f[1], "=")
					h.local.heard[slotstore.NodeID(h.num(n))] = h.dur(ago)
				case "on-wake":
					n, term, _ := strings.Cut(f[1], "/")
					h.onWake, h.onWakeTerm = slotstore.NodeID(h.num(n)), h.num(term)
				case "hops":
					h.cfg.MaxForwardHops = int(h.num(f[1]))
				case "leader-wait":
					h.cfg.LeaderWait = h.dur(f[1])
				case "hop-timeout":
					h.cfg.ForwardHopTimeout = h.dur(f[1])
				case "grace":
					h.cfg.ForwardMoveGrace = h.dur(f[1])
				default:
					steps = append(steps, line)
				}
			}
			h.script(strings.Join(steps, "\n"))
			h.start()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var outcome string
			switch d.Cmd {
			case "propose":
				cmd := &meta.PutKV{Key: "k", Value: []byte("v")}
				for _, a := range d.CmdArgs {
					switch a.Key {
					case "idem":
						cmd.IdempotencyKey = "idem-1"
					case "key":
						cmd.Key = a.Vals[0]
					}
				}
				res, route, err := h.d.Propose(ctx, cmd)
				outcome = describeWrite(res, route, err)
			case "propose-to-group":
				res, err := h.d.ProposeToGroup(ctx, 1, &meta.PutKV{Key: "k", Value: []byte("v")})
				outcome = describeWrite(res, slotstore.Route{}, err)
			case "read":
				c := meta.Linearizable
				if d.HasArg("local") {
					c = meta.Local
				}
				q := &meta.GetKV{Key: "k", HashSlot: slotstore.HashSlotOfString("k")}
				v, info, err := h.d.Read(ctx, q, c)
				if err != nil {
					outcome = "read: " + describeErr(err)
				} else {
					outcome = fmt.Sprintf("read %q from node %d (applied %d)", v, info.ServedBy, info.AppliedIndex)
				}
			case "read-rows":
				c := meta.Linearizable
				if d.HasArg("local") {
					c = meta.Local
				}
				q := &meta.GetRows{HashSlot: slotstore.HashSlotOfString("k"), Table: meta.TableKV, Keys: []meta.RowRef{{Key: "k"}}}
				a := h.d.ReadRows(ctx, []*meta.GetRows{q}, c)
				switch {
				case len(a) != 1:
					outcome = fmt.Sprintf("read rows: %d answers for 1 query", len(a))
				case a[0].Err != nil:
					outcome = "read rows: " + describeErr(a[0].Err)
				default:
					outcome = fmt.Sprintf("read rows: %q", a[0].Batch.Items[0].Row)
				}
			default:
				t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
			}
			return strings.Join(append(append(h.log, outcome), h.unused()...), "\n") + "\n"
		})
	})
}

func (h *harness) dur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		h.t.Fatalf("not a duration: %q", s)
	}
	return d
}

func describeWrite(res meta.Result, route slotstore.Route, err error) string {
	if err != nil {
		return "write: " + describeErr(err)
	}
	if !res.OK() {
		return fmt.Sprintf("write: result %s", res.Code)
	}
	if route.GroupID == 0 {
		return fmt.Sprintf("write: ok (revision %d)", res.Revision)
	}
	return fmt.Sprintf("write: ok (revision %d; group %d, leader %d)", res.Revision, route.GroupID, route.LeaderNodeID)
}

// describeErr is an error as the client would read it: code, hint, retry
// and message.
func describeErr(err error) string {
	var se *slotstore.Error
	if !errors.As(err, &se) {
		return "untyped error: " + err.Error()
	}
	s := string(se.Code)
	if se.LeaderHint != 0 {
		s += fmt.Sprintf(" hint=%d", se.LeaderHint)
	}
	if se.LeaderTerm != 0 {
		s += fmt.Sprintf(" term=%d", se.LeaderTerm)
	}
	return s + ": " + se.Message
}
