package sim

import (
	"strings"
	"testing"
	"time"
)

func TestParseScenario(t *testing.T) {
	sc, err := ParseScenario(strings.NewReader(`
# comment
nodes 10
groups 20   # trailing comment
rf 3
slot-bytes 8MB
load 500
duration 90m
balancer max-tasks=4 groups-per-node=2
at 5m drain 2
at 1m join 3 every 30s
at 2m down 10% for 1m
at 3m restart all every 1m down 20s
at 4m hot-slot 7 30%
expect converged within 10m
expect replica-skew <= 1
expect drained
`))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Nodes != 10 || sc.Groups != 20 || sc.SlotBytes != 8<<20 || sc.Duration != 90*time.Minute ||
		sc.Params.Balancer.MaxTasks != 4 || sc.Params.Balancer.GroupsPerNode != 2 || len(sc.Events) != 5 || len(sc.Expect) != 3 {
		t.Fatalf("parsed %+v", sc)
	}
	if sc.Events[0].Kind != "join" || sc.Events[0].N != 3 || sc.Events[0].Every != 30*time.Second || sc.Events[4].Kind != "drain" {
		t.Fatalf("events out of time order or misread: %+v", sc.Events)
	}
	if ev := sc.Events[1]; ev.Pct != 10 || ev.For != time.Minute {
		t.Fatalf("down: %+v", ev)
	}
	if end := sc.lastEventEnd(10); end != 3*time.Minute+9*time.Minute+20*time.Second {
		t.Fatalf("last event ends at %v", end)
	}
}

// TestParseScenarioRefuses: a mistake in a scenario file is an error that
// names the line, never a run of something else.
func TestParseScenarioRefuses(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"nodes x", "line 1"},
		{"groups 300", "outside 1..256"},
		{"nodes 2\nrf 3", "rf 3"},
		{"frobnicate 1", "unknown keyword"},
		{"at 1m explode", "unknown event"},
		{"at soon join 1", "line 1"},
		{"at 1m hot-slot 256 10%", "hash slot 256"},
		{"expect converged 5m", "converged within D"},
		{"expect happiness <= 1", "unknown expectation"},
		{"balancer max-tasks", "key=value"},
		{"duration 0s", "no duration"},
	} {
		if _, err := ParseScenario(strings.NewReader(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one saying %q", tc.text, err, tc.want)
		}
	}
}
