package sim

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// recorder keeps what the report says of a run: samples of the spread over
// time, the moves the controller started, the controller leader's and the
// balancer's cost, and the largest controller state and command.
type recorder struct {
	r           *Run
	mu          sync.Mutex // commands arrive from the leader's goroutines too
	sampleEvery time.Duration
	samples     []Sample

	rounds, plans []time.Duration
	planAlloc     []uint64
	maxCommand    int
	maxState      int
	moves         Moves
	replicaHist   map[slotstore.GroupID][][2]slotstore.NodeID // replica moves per group, from → to
	slotHist      map[slotstore.HashSlot][]slotstore.GroupID  // groups each moved slot was in
	groupOps      []string                                    // split/merge in order
	lastActivity  time.Duration                               // the last balancer round that planned, or saw a task run
	quorumLost    map[slotstore.GroupID]bool
	maxLeaderless int
}

// Sample is the cluster at one moment: per node, the replicas the
// controller places on it, the groups it leads and the load it serves.
type Sample struct {
	At       time.Duration
	Nodes    []slotstore.NodeID
	Replicas []int
	Leaders  []int
	Load     []float64 // ops/s of the groups the node leads
	Tasks    int
}

// Moves counts what the controller started, and the tasks that failed
// (a phase timed out, or a step refused for good).
type Moves struct {
	Replica, Slot, Split, Merge, Leader, Undone, Failed int
}

func newRecorder(r *Run) *recorder {
	every := max(r.sc.Params.withDefaults().Step, r.sc.Duration/240)
	return &recorder{r: r, sampleEvery: every, replicaHist: map[slotstore.GroupID][][2]slotstore.NodeID{},
		slotHist: map[slotstore.HashSlot][]slotstore.GroupID{}, quorumLost: map[slotstore.GroupID]bool{}}
}

func (rec *recorder) command(bytes int) {
	rec.mu.Lock()
	rec.maxCommand = max(rec.maxCommand, bytes)
	rec.mu.Unlock()
}

// started records a command the controller applied that moves something.
func (rec *recorder) started(c controller.Command, st *controller.State) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	switch {
	case c.CreateMove != nil:
		m := c.CreateMove
		for _, prev := range rec.replicaHist[m.Group] {
			if prev[0] == m.To && prev[1] == m.From {
				rec.moves.Undone++
				break
			}
		}
		rec.replicaHist[m.Group] = append(rec.replicaHist[m.Group], [2]slotstore.NodeID{m.From, m.To})
		rec.moves.Replica++
	case c.SlotMigrate != nil:
		hs := c.SlotMigrate.HashSlot
		if slices.Contains(rec.slotHist[hs], c.SlotMigrate.ToGroup) {
			rec.moves.Undone++
		}
		if len(rec.slotHist[hs]) == 0 && int(hs) < len(st.HashToGroup) {
			rec.slotHist[hs] = append(rec.slotHist[hs], st.HashToGroup[hs])
		}
		rec.slotHist[hs] = append(rec.slotHist[hs], c.SlotMigrate.ToGroup)
		rec.moves.Slot++
	case c.CreateSplit != nil, c.CreateMerge != nil:
		op := "split"
		if c.CreateMerge != nil {
			op = "merge"
			rec.moves.Merge++
		} else {
			rec.moves.Split++
		}
		if n := len(rec.groupOps); n > 0 && rec.groupOps[n-1] != op {
			rec.moves.Undone++ // the group count turned back
		}
		rec.groupOps = append(rec.groupOps, op)
	case c.SetPreferred != nil:
		rec.moves.Leader++
	case c.AdvanceTask != nil && c.AdvanceTask.Status == controller.TaskFailed:
		rec.moves.Failed++
	}
}

func (rec *recorder) round(took time.Duration) {
	rec.rounds = append(rec.rounds, took)
}

func (rec *recorder) plan(took time.Duration, alloc uint64, actions int) {
	rec.plans = append(rec.plans, took)
	rec.planAlloc = append(rec.planAlloc, alloc)
	running := 0
	for _, t := range rec.r.state().Tasks {
		if t.Status == controller.TaskRunning || t.Status == controller.TaskCancelling {
			running++
		}
	}
	if actions > 0 || running > 0 {
		rec.lastActivity = rec.r.Elapsed()
	}
}

// sample records the spread now (every sampleEvery) and the groups
// without a quorum (every step).
func (rec *recorder) sample(now time.Time) {
	w := rec.r.w
	w.mu.Lock()
	leaderless := 0
	for gid, g := range w.groups {
		if len(w.upVoters(g)) <= len(g.voters)/2 {
			rec.quorumLost[gid] = true
		}
		if w.leaderNode(g) == 0 {
			leaderless++
		}
	}
	rec.maxLeaderless = max(rec.maxLeaderless, leaderless)
	w.mu.Unlock()
	at := now.Sub(start)
	if at%rec.sampleEvery != 0 {
		return
	}
	st := rec.r.state()
	if b, err := json.Marshal(st); err == nil {
		rec.maxState = max(rec.maxState, len(b))
	}
	s := Sample{At: at}
	w.mu.Lock()
	leads, load := map[slotstore.NodeID]int{}, map[slotstore.NodeID]float64{}
	for hs, gid := range w.owner {
		load[w.leaderNode(w.groups[gid])] += w.slotRate[hs]
	}
	for _, g := range w.groups {
		leads[w.leaderNode(g)]++
	}
	for _, id := range slices.Sorted(maps.Keys(w.nodes)) {
		n := st.Nodes[id]
		if n == nil || n.State != controller.NodeActive || !w.nodes[id].up {
			continue
		}
		s.Nodes = append(s.Nodes, id)
		s.Replicas = append(s.Replicas, st.ReplicasOn(id))
		s.Leaders = append(s.Leaders, leads[id])
		s.Load = append(s.Load, load[id])
	}
	w.mu.Unlock()
	for _, t := range st.Tasks {
		if t.Status == controller.TaskRunning || t.Status == controller.TaskCancelling {
			s.Tasks++
		}
	}
	rec.samples = append(rec.samples, s)
}
