package sim

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Scenario is a simulation as a data file describes it (testdata/*.sim):
//
//	# a comment
//	nodes 3                  founding nodes
//	groups 8                 founding groups (at most the 256 hash slots)
//	rf 3                     replication factor
//	slot-bytes 4MB           data per hash slot
//	load 2000                operations per second, spread over the slots
//	duration 2h              simulated time
//	seed 1                   the world's draws (elections)
//	step 1s                  the controller leader's round (ObserveInterval)
//	balancer max-tasks=4 groups-per-node=1 max-groups=256
//	at 1m join 97 every 20s  events, at a simulated time
//	expect replica-skew <= 1 outcomes checked at the end
//
// Events: join N [every D]; kill N|P% (the highest ids up, for good);
// down N|P% for D; restart all every D down D (rolling); drain N|P%|killed;
// hot-slot S P% (slot S takes P% of the load); load R.
//
// Expectations: converged within D (after the last event: no task runs and
// the balancer plans nothing, for three balancer rounds); replica-skew,
// leader-skew <= N (between active nodes that are up, at the end);
// group-load-skew <= X (the busiest group's load over the mean); undone <=
// N (moves that took back an earlier one); failed <= N (tasks that failed:
// a phase timed out); quorum-lost <= N (groups that
// lacked a quorum of live voters at some point); drained (draining nodes
// hold nothing at the end); hot-slot-group-slots <= N.
type Scenario struct {
	Name      string
	Nodes     int
	Groups    int
	RF        int
	SlotBytes int64
	Load      float64
	Duration  time.Duration
	Seed      int64
	Params    Params
	Events    []Event
	Expect    []Expectation
	next      int // the first event not applied yet
}

// Event is one scheduled change.
type Event struct {
	At    time.Duration
	What  string // the line, for reports
	Kind  string
	N     int     // nodes, or a slot
	Pct   float64 // a share of the nodes or of the load
	Every time.Duration
	For   time.Duration
	Rate  float64
	Ref   string // drain: "killed"
}

// Expectation is one outcome a run must show.
type Expectation struct {
	What  string
	Name  string
	Op    string // <=, within, or "" (a flag)
	Value float64
	Dur   time.Duration
}

// LoadScenario reads a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc, err := ParseScenario(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return sc, nil
}

// ParseScenario reads a scenario.
func ParseScenario(r io.Reader) (*Scenario, error) {
	sc := &Scenario{Nodes: 3, Groups: 8, RF: 3, SlotBytes: 4 << 20, Load: 1000, Duration: time.Hour, Seed: 1}
	s := bufio.NewScanner(r)
	line := 0
	for s.Scan() {
		line++
		text, _, _ := strings.Cut(s.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if err := sc.parseLine(f); err != nil {
			return nil, fmt.Errorf("line %d: %q: %w", line, strings.TrimSpace(text), err)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(sc.Events, func(a, b Event) int { return int(a.At - b.At) })
	return sc, sc.validate()
}

func (sc *Scenario) validate() error {
	switch {
	case sc.Nodes < 1 || sc.Nodes > 5000:
		return fmt.Errorf("nodes %d outside 1..5000", sc.Nodes)
	case sc.Groups < 1 || sc.Groups > slotstore.HashSlotCount:
		return fmt.Errorf("groups %d outside 1..%d: a group owns at least one of the %d hash slots", sc.Groups, slotstore.HashSlotCount, slotstore.HashSlotCount)
	case sc.RF < 1 || sc.RF > sc.Nodes:
		return fmt.Errorf("rf %d outside 1..nodes", sc.RF)
	case sc.Duration <= 0:
		return fmt.Errorf("no duration")
	}
	return nil
}

func (sc *Scenario) parseLine(f []string) error {
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	var err error
	switch f[0] {
	case "name":
		sc.Name = arg(1)
	case "nodes":
		sc.Nodes, err = strconv.Atoi(arg(1))
	case "groups":
		sc.Groups, err = strconv.Atoi(arg(1))
	case "rf":
		sc.RF, err = strconv.Atoi(arg(1))
	case "slot-bytes":
		sc.SlotBytes, err = parseBytes(arg(1))
	case "load":
		sc.Load, err = strconv.ParseFloat(arg(1), 64)
	case "duration":
		sc.Duration, err = time.ParseDuration(arg(1))
	case "seed":
		sc.Seed, err = strconv.ParseInt(arg(1), 10, 64)
	case "step":
		sc.Params.Step, err = time.ParseDuration(arg(1))
	case "balance-interval":
		sc.Params.BalanceInterval, err = time.ParseDuration(arg(1))
	case "balancer":
		err = sc.parseBalancer(f[1:])
	case "at":
		err = sc.parseEvent(f)
	case "expect":
		err = sc.parseExpect(f)
	default:
		err = fmt.Errorf("unknown keyword %q", f[0])
	}
	return err
}

func (sc *Scenario) parseBalancer(kvs []string) error {
	b := &sc.Params.Balancer
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("balancer setting %q is not key=value", kv)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("balancer %s: %w", k, err)
		}
		switch k {
		case "max-tasks":
			b.MaxTasks = n
		case "groups-per-node":
			b.GroupsPerNode = n
		case "max-groups":
			b.MaxGroups = n
		case "replica-skew":
			b.ReplicaSkew = n
		case "leader-skew":
			b.LeaderSkew = n
		default:
			return fmt.Errorf("unknown balancer setting %q", k)
		}
	}
	return nil
}

// parseEvent reads "at T kind args…".
func (sc *Scenario) parseEvent(f []string) error {
	if len(f) < 3 {
		return fmt.Errorf("an event is: at TIME KIND ARGS")
	}
	at, err := time.ParseDuration(f[1])
	if err != nil {
		return err
	}
	ev := Event{At: at, What: strings.Join(f[1:], " "), Kind: f[2]}
	args := f[3:]
	opt := func(name string) (time.Duration, error) {
		if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
			return time.ParseDuration(args[i+1])
		}
		return 0, nil
	}
	count := func(s string) error {
		if p, ok := strings.CutSuffix(s, "%"); ok {
			ev.Pct, err = strconv.ParseFloat(p, 64)
			return err
		}
		ev.N, err = strconv.Atoi(s)
		return err
	}
	switch ev.Kind {
	case "join":
		if err := count(argAt(args, 0)); err != nil {
			return err
		}
		ev.Every, err = opt("every")
	case "kill":
		err = count(argAt(args, 0))
	case "down":
		if err := count(argAt(args, 0)); err != nil {
			return err
		}
		ev.For, err = opt("for")
	case "restart":
		if argAt(args, 0) != "all" {
			return fmt.Errorf("restart all every D down D")
		}
		if ev.Every, err = opt("every"); err != nil {
			return err
		}
		ev.For, err = opt("down")
	case "drain":
		if argAt(args, 0) == "killed" {
			ev.Ref = "killed"
		} else {
			err = count(argAt(args, 0))
		}
	case "hot-slot":
		if ev.N, err = strconv.Atoi(argAt(args, 0)); err != nil {
			return err
		}
		if !slotstore.HashSlot(ev.N).Valid() {
			return fmt.Errorf("hash slot %d", ev.N)
		}
		err = count(argAt(args, 1))
	case "load":
		ev.Rate, err = strconv.ParseFloat(argAt(args, 0), 64)
	default:
		return fmt.Errorf("unknown event %q", ev.Kind)
	}
	if err != nil {
		return err
	}
	sc.Events = append(sc.Events, ev)
	return nil
}

func argAt(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

func (sc *Scenario) parseExpect(f []string) error {
	if len(f) < 2 {
		return fmt.Errorf("expect NAME [<= N | within D]")
	}
	e := Expectation{What: strings.Join(f[1:], " "), Name: f[1]}
	switch e.Name {
	case "drained":
	case "converged":
		if len(f) != 4 || f[2] != "within" {
			return fmt.Errorf("expect converged within D")
		}
		d, err := time.ParseDuration(f[3])
		if err != nil {
			return err
		}
		e.Op, e.Dur = "within", d
	case "replica-skew", "leader-skew", "group-load-skew", "undone", "failed", "quorum-lost", "hot-slot-group-slots", "slot-moves":
		if len(f) != 4 || f[2] != "<=" {
			return fmt.Errorf("expect %s <= N", e.Name)
		}
		v, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			return err
		}
		e.Op, e.Value = "<=", v
	default:
		return fmt.Errorf("unknown expectation %q", e.Name)
	}
	sc.Expect = append(sc.Expect, e)
	return nil
}

// parseBytes reads 4MB, 512KB, 1GB or a plain count.
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = v, u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

// due returns the events whose time came by elapsed, once each.
func (sc *Scenario) due(elapsed time.Duration) []Event {
	var out []Event
	for sc.next < len(sc.Events) && sc.Events[sc.next].At <= elapsed {
		out = append(out, sc.Events[sc.next])
		sc.next++
	}
	return out
}

// lastEventEnd is when the last event's effects end (a rolling restart or
// a spread join last past their start).
func (sc *Scenario) lastEventEnd(nodes int) time.Duration {
	var end time.Duration
	for _, ev := range sc.Events {
		e := ev.At + ev.For
		switch ev.Kind {
		case "join":
			e = ev.At + time.Duration(max(ev.N-1, 0))*ev.Every
		case "restart":
			e = ev.At + time.Duration(max(nodes-1, 0))*ev.Every + ev.For
		}
		end = max(end, e)
	}
	return end
}
