package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/checks"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

// Session is who looks at the page.
type Session struct {
	Node        slotstore.NodeID
	AuthEnabled bool
	SignedIn    bool
	Role        string
	CanAct      bool // may run actions (admin, or access control off)
	// Insecure: the node runs with --insecure; Warnings say what is exposed.
	Insecure bool
	Warnings []string
}

// Flash is the outcome of the previous action.
type Flash struct {
	OK      bool
	Message string
}

// PageProps frame every full page.
type PageProps struct {
	Title   string
	Nav     string
	Session Session
	Flash   *Flash
	Now     time.Time
	Version string // the node's, in the footer ("" not shown)
}

// NodeRow is one node in the overview.
type NodeRow struct {
	slotstore.NodeInfo
	Replicas int                  // replicas observed on it
	Leads    int                  // groups it leads
	Health   slotstore.NodeHealth // as the controller leader observes it
}

// OverviewProps is the overview page.
type OverviewProps struct {
	Summary       slotstore.ClusterSummary
	Nodes         []NodeRow
	WithLeader    int
	WithoutLeader int
	// Known: the groups' views came (from the controller leader); without
	// them the counts are unknown, never 0, and the node's own view
	// (Summary.Local) is what it can show.
	Known bool
	// Diverged are the last state checks that found a group's replicas
	// differing (a banner).
	Diverged []slotstore.GroupCheck
	Now      time.Time
	Err      string
}

// SlotCell is one hash slot of the map.
type SlotCell struct {
	Slot        slotstore.HashSlot
	Group       slotstore.GroupID
	Leader      slotstore.NodeID
	Migrating   bool
	MigratingTo slotstore.GroupID
	TaskID      uint64
}

// LegendItem is one group in the slot map's legend.
type LegendItem struct {
	Group  slotstore.GroupID
	Leader slotstore.NodeID
	Slots  int
}

// SlotsProps is the hash-slot map.
type SlotsProps struct {
	Cells  []SlotCell
	Legend []LegendItem
	Now    time.Time
	Err    string
}

// GroupsProps is the groups page.
type GroupsProps struct {
	Groups []slotstore.GroupView
	Now    time.Time
	CanAct bool
	Err    string
	// Node and Local: when the groups' views did not come (no controller
	// leader answers), this node and its own replicas as it sees them
	// (Summary.Local), shown instead and said to be so.
	Node  slotstore.NodeID
	Local []slotstore.LocalReplica
}

// Candidate is a possible new leader with its preflight verdict.
type Candidate struct {
	Node      slotstore.NodeID
	Preflight slotstore.Preflight
	Err       string
}

// GroupProps is one group's page.
type GroupProps struct {
	Group      slotstore.GroupView
	Found      bool
	Candidates []Candidate
	Nodes      []slotstore.NodeInfo
	Tasks      []slotstore.Task
	Decisions  []DecisionRow       // newest first, a task's steps folded
	Others     []slotstore.GroupID // the groups that own slots, this one aside (merge targets)
	CanAct     bool
	Now        time.Time
	Err        string
	// Node and Local: when the group's view did not come, this node and its
	// own replica of the group (nil: none), shown instead.
	Node  slotstore.NodeID
	Local *slotstore.LocalReplica
}

// TasksProps is the tasks page.
type TasksProps struct {
	Tasks []slotstore.Task
	Now   time.Time
}

// DecisionsProps is the decision log, newest first.
type DecisionsProps struct {
	Decisions []DecisionRow
	Now       time.Time
	// Before is the sequence number this page lists below (0: from the
	// newest); Older, the one the next page does (0: none older).
	Before, Older uint64
}

// DecisionRow is one row of the decision log: a decision and, for a
// task's phase step, the earlier steps of the same task folded under it.
type DecisionRow struct {
	slotstore.Decision
	Folded []slotstore.Decision
}

// AuditProps is the audit trail, newest first.
type AuditProps struct {
	Records []slotstore.AuditRecord
	Now     time.Time
}

// LoginProps is the login form.
type LoginProps struct {
	Next        string
	AuthEnabled bool
	Error       string
}

// ---- formatting helpers used by the templates ----

func u64(v uint64) string { return strconv.FormatUint(v, 10) }
func num(v int) string    { return strconv.Itoa(v) }
func gid(g slotstore.GroupID) string {
	return strconv.FormatUint(uint64(g), 10)
}
func nid(n slotstore.NodeID) string { return strconv.FormatUint(uint64(n), 10) }

func nodeName(n slotstore.NodeID) string {
	if n == 0 {
		return "—"
	}
	return "node " + nid(n)
}

// listOf shows each of xs as name makes it, comma-separated, or "—" for
// none.
func listOf[T any](xs []T, name func(T) string) string {
	if len(xs) == 0 {
		return "—"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = name(x)
	}
	return strings.Join(s, ", ")
}

func nodeList(ns []slotstore.NodeID) string { return listOf(ns, nid) }

func replicaList(ns []uint64) string {
	return listOf(ns, func(n uint64) string { return "r" + u64(n) })
}

func desiredList(ps []slotstore.DesiredPeer) string {
	return listOf(ps, func(p slotstore.DesiredPeer) string { return fmt.Sprintf("%d (r%d)", p.Node, p.ReplicaID) })
}

// dur is a compact duration: 850ms, 4.2s, 3m10s, 2h5m, 3d4h.
func dur(ms int64) string {
	if ms < 0 {
		ms = -ms
	}
	switch {
	case ms < 1000:
		return fmt.Sprintf("%dms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1fs", float64(ms)/1000)
	case ms < 3_600_000:
		return fmt.Sprintf("%dm%02ds", ms/60_000, ms/1000%60)
	case ms < 86_400_000:
		return fmt.Sprintf("%dh%02dm", ms/3_600_000, ms/60_000%60)
	}
	return fmt.Sprintf("%dd%02dh", ms/86_400_000, ms/3_600_000%24)
}

// ago is a relative time: "4.2s ago" (or "in 1s" for a clock ahead).
func ago(atMs int64, now time.Time) string {
	if atMs == 0 {
		return "never"
	}
	d := now.UnixMilli() - atMs
	if d < 0 {
		return "in " + dur(d)
	}
	return dur(d) + " ago"
}

// abs is an absolute UTC time.
func abs(atMs int64) string {
	if atMs == 0 {
		return "—"
	}
	return time.UnixMilli(atMs).UTC().Format("2006-01-02 15:04:05Z")
}

func absISO(atMs int64) string { return time.UnixMilli(atMs).UTC().Format(time.RFC3339Nano) }

func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// Lag thresholds: a replica further behind is called lagging; a report
// older than staleMs is stale.
const (
	laggingEntries = 100
	staleMs        = 10_000
)

func maxLag(g slotstore.GroupView) uint64 {
	var m uint64
	for _, r := range g.Replicas {
		m = max(m, r.Lag)
	}
	return m
}

// lagWidth is the width of a replica's lag bar, in percent of the group's
// largest lag (at least a sliver when behind at all).
func lagWidth(lag, maxLag uint64) string {
	if lag == 0 || maxLag == 0 {
		return "width:0%"
	}
	pct := max(int(lag*100/maxLag), 4)
	return "width:" + strconv.Itoa(pct) + "%"
}

func replicaState(g slotstore.GroupView, r slotstore.ReplicaView) (label, class string) {
	switch {
	case r.Fenced:
		return r.Failed, "bad" // "fenced by a state check: …"
	case r.Failed != "":
		return "failed to start: " + r.Failed, "bad"
	case g.Leader != 0 && r.Node == g.Leader:
		return "leader", "ok"
	case r.ReportAgeMs > staleMs:
		return "stale report", "bad"
	case r.Role == slotstore.RoleVoter && !r.Live:
		return "not live", "bad"
	case r.Lag > laggingEntries:
		return "lagging", "warn"
	case r.Lag > 0:
		return "behind", ""
	}
	return "caught up", "ok"
}

// nodeHealth labels a node as the controller leader sees it.
func nodeHealth(n NodeRow) (label, class string) {
	switch {
	case n.State == slotstore.NodeRemoved:
		return "removed", "muted"
	case n.Health.Health == slotstore.NodeUnreachable:
		return "⚠ unreachable", "bad"
	case n.Health.Health == slotstore.NodeReachable:
		return "reachable", "ok"
	}
	return "unknown", "warn"
}

// mib formats bytes in MiB.
func mib(n uint64) string { return fmt.Sprintf("%d MiB", n>>20) }

// nodeVersion is the release line a node reported it runs ("?" before its
// first report; a report without one is a release before cluster
// versions).
func nodeVersion(h slotstore.NodeHealth) string {
	if h.ReportAgeMs < 0 {
		return "?"
	}
	return clusterversion.Running(h.Version).String()
}

// groupHealthLabel labels a group's observed health.
func groupHealthLabel(g slotstore.GroupView) (label, class string) {
	switch g.Health {
	case slotstore.GroupHealthy:
		return "healthy", "ok"
	case slotstore.GroupUnderReplicated:
		return fmt.Sprintf("⚠ under-replicated (%d of %d voters live)", g.LiveVoters, len(g.DesiredPeers)), "bad"
	case slotstore.GroupNoLeader:
		return "⚠ no leader", "bad"
	}
	return "unknown", "muted"
}

func taskActive(t slotstore.Task) bool { return t.Status == "running" || t.Status == "cancelling" }

func statusClass(s slotstore.TaskStatus) string {
	switch s {
	case "succeeded", "done":
		return "ok"
	case "failed":
		return "bad"
	case "running", "cancelling":
		return "warn"
	}
	return "muted"
}

func taskSubject(t slotstore.Task) string {
	switch {
	case t.Kind == "group_split" || t.Kind == "group_merge":
		s := fmt.Sprintf("group %d → group %d: %d hash slots moved, %d to go", t.Group, t.ToGroup, t.Moved, len(t.HashSlots))
		if t.HashSlot != nil {
			s += fmt.Sprintf(" (slot %d now)", *t.HashSlot)
		}
		return s
	case t.HashSlot != nil:
		return fmt.Sprintf("slot %d: group %d → group %d", *t.HashSlot, t.Group, t.ToGroup)
	case t.From != 0 || t.To != 0:
		return fmt.Sprintf("group %d: node %d (r%d) → node %d (r%d)", t.Group, t.From, t.OldReplicaID, t.To, t.NewReplicaID)
	}
	return fmt.Sprintf("group %d", t.Group)
}

func slotTitle(c SlotCell) string {
	s := fmt.Sprintf("slot %d → group %d, leader %s", c.Slot, c.Group, nodeName(c.Leader))
	if c.Leader == 0 {
		s = fmt.Sprintf("slot %d → group %d, NO LIVE LEADER", c.Slot, c.Group)
	}
	if c.Migrating {
		s += fmt.Sprintf("; migrating to group %d (task %d)", c.MigratingTo, c.TaskID)
	}
	return s
}

func slotClass(c SlotCell) string {
	s := "cell g" + strconv.Itoa(int(c.Group)%10)
	if c.Leader == 0 {
		s += " noleader"
	}
	if c.Migrating {
		s += " migrating"
	}
	return s
}

func legendClass(g slotstore.GroupID) string { return "swatch g" + strconv.Itoa(int(g)%10) }

func groupHref(g slotstore.GroupID) string { return "/console/groups/" + gid(g) }

func joinRoles(r []slotstore.NodeRole) string {
	return listOf(r, func(role slotstore.NodeRole) string { return string(role) })
}

// moveFrom and moveTo preselect a replica move: from a desired peer (not
// the leader, when possible), to a node that holds no replica of the group.
func moveFrom(g slotstore.GroupView) slotstore.NodeID {
	var first slotstore.NodeID
	for _, p := range g.DesiredPeers {
		if first == 0 {
			first = p.Node
		}
		if p.Node != g.Leader {
			return p.Node
		}
	}
	return first
}

func moveTo(g slotstore.GroupView, nodes []slotstore.NodeInfo) slotstore.NodeID {
	for _, n := range nodes {
		held := false
		for _, p := range g.DesiredPeers {
			held = held || p.Node == n.ID
		}
		if !held && n.State != slotstore.NodeRemoved {
			return n.ID
		}
	}
	return 0
}

// describeCheck says in words what a state check found.
func describeCheck(c slotstore.GroupCheck) string { return checks.Describe(c) }

// checkClass is the style of a state check's verdict.
func checkClass(v slotstore.CheckVerdict) string {
	switch {
	case v == slotstore.CheckConsistent:
		return "ok"
	case v.Alarming():
		return "bad"
	}
	return "warn"
}
