package replicas

import (
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// fakeMono is a monotonic clock a test moves by hand.
type fakeMono struct{ t time.Duration }

func (c *fakeMono) now() time.Duration  { return c.t }
func (c *fakeMono) add(d time.Duration) { c.t += d }
func testDisruptions(c *fakeMono) *disruptions {
	d := newDisruptions(2*time.Second, time.Second)
	d.now = c.now
	return d
}

func TestDisruptions(t *testing.T) {
	const shard, me, other = 1001, 1, 2
	type step struct {
		do       func(d *disruptions, c *fakeMono)
		wantKind slotstore.Disruption
		wantAgo  time.Duration
	}
	leader := func(l uint64) func(*disruptions, *fakeMono) {
		return func(d *disruptions, _ *fakeMono) { d.leaderUpdated(shard, l) }
	}
	wait := func(x time.Duration) func(*disruptions, *fakeMono) {
		return func(_ *disruptions, c *fakeMono) { c.add(x) }
	}
	for _, tc := range []struct {
		name      string
		restarted bool
		steps     []step
	}{
		{"a fresh replica's first election is no disruption", false, []step{
			{wait(5 * time.Second), "", 0}, {leader(other), "", 0}, {wait(time.Second), "", 0},
		}},
		{"a restart is one", true, []step{
			{wait(3 * time.Second), slotstore.DisruptionRestarted, 3 * time.Second}, {leader(other), slotstore.DisruptionRestarted, 3 * time.Second},
		}},
		{"leadership lost without a transfer away (check-quorum step-down)", false, []step{
			{leader(me), "", 0}, {wait(10 * time.Second), "", 0}, {leader(0), slotstore.DisruptionLostLeadership, 0},
			{wait(500 * time.Millisecond), slotstore.DisruptionLostLeadership, 500 * time.Millisecond},
		}},
		{"leadership handed away on request", false, []step{
			{leader(me), "", 0}, {func(d *disruptions, _ *fakeMono) { d.transferAway(shard) }, "", 0},
			{wait(100 * time.Millisecond), "", 0}, {leader(0), "", 0}, {leader(other), "", 0},
		}},
		{"a transfer asked long before does not excuse a loss", false, []step{
			{leader(me), "", 0}, {func(d *disruptions, _ *fakeMono) { d.transferAway(shard) }, "", 0},
			{wait(5 * time.Second), "", 0}, {leader(other), slotstore.DisruptionLostLeadership, 0},
		}},
		{"a short election is no disruption", false, []step{
			{leader(other), "", 0}, {leader(0), "", 0}, {wait(time.Second), "", 0}, {leader(me), "", 0},
		}},
		{"a long spell without a leader is one, while it lasts and after", false, []step{
			{leader(other), "", 0}, {leader(0), "", 0}, {wait(3 * time.Second), slotstore.DisruptionNoLeader, 0},
			{wait(4 * time.Second), slotstore.DisruptionNoLeader, 0}, {leader(other), slotstore.DisruptionNoLeader, 0},
			{wait(10 * time.Second), slotstore.DisruptionNoLeader, 10 * time.Second},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeMono{t: time.Hour}
			d := testDisruptions(c)
			d.started(shard, me, tc.restarted)
			for i, s := range tc.steps {
				s.do(d, c)
				if kind, ago := d.last(shard); kind != s.wantKind || ago != s.wantAgo {
					t.Fatalf("step %d: last disruption %q %v ago, want %q %v ago", i, kind, ago, s.wantKind, s.wantAgo)
				}
			}
		})
	}
	d := testDisruptions(&fakeMono{})
	d.leaderUpdated(7, 1) // an unknown shard is ignored
	if kind, _ := d.last(7); kind != "" {
		t.Fatalf("unknown shard reported %q", kind)
	}
	d.started(7, 1, true)
	d.forget(7)
	if kind, _ := d.last(7); kind != "" {
		t.Fatalf("a forgotten replica reported %q", kind)
	}
}
