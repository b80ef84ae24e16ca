package replicas

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Fenced replicas (issue 52). A state check that finds this node's replica
// of a group in the minority — its rows differ from those of a majority of
// the group's replicas at one Raft index — fences it: the replica stops at
// once (no local read, lease read, vote or apply on it from then on), its
// data stays for an operator to look at, and it is reported like a replica
// that failed to start (failures.go: the node's status, readiness, the
// group's view, a metric), so the balancer rebuilds it from the majority
// by moving it off, which removes what it left here.
//
// The fence outlives the process: a mark in <dir>/<shard>-<replica> (JSON
// with the reason, synced — a divergent replica that came back after a
// power cut would serve reads again) is written before the replica stops,
// and is removed with the replica's data.

// Fenced is the failure of a replica fenced by a state check.
type Fenced struct{ Reason string }

func (e *Fenced) Error() string { return "fenced by a state check: " + e.Reason }

// fences keeps the fence marks of one data directory.
type fences struct {
	dir string
	mu  sync.Mutex
	m   map[markKey]string // reason
}

// loadFences reads the marks in dir (created if missing).
func loadFences(dir string) (*fences, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("replicas: fence marks: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("replicas: fence marks: %w", err)
	}
	f := &fences{dir: dir, m: map[markKey]string{}}
	for _, e := range ents {
		k, ok := parseMarkName(e.Name())
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		var v struct{ Reason string }
		if err != nil || json.Unmarshal(data, &v) != nil {
			v.Reason = "the fence mark is unreadable; fenced to be safe"
		}
		f.m[k] = v.Reason
	}
	return f, nil
}

// fence marks replica of shard fenced, durably.
func (f *fences) fence(shard, replica uint64, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := markKey{shard, replica}
	data, _ := json.Marshal(struct{ Reason string }{reason})
	if err := backup.WriteFile(f.dir, markName(k), data); err != nil {
		return fmt.Errorf("replicas: write the fence mark of shard %d replica %d: %w", shard, replica, err)
	}
	f.m[k] = reason
	return nil
}

// fenced returns why replica of shard is fenced, if it is.
func (f *fences) fenced(shard, replica uint64) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.m[markKey{shard, replica}]
	return r, ok
}

// drop removes the marks of shard: its replica's data is gone.
func (f *fences) drop(shard uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.m {
		if k.shard == shard {
			_ = os.Remove(filepath.Join(f.dir, markName(k)))
			delete(f.m, k)
		}
	}
}

// Fence stops this node's replica of g, if it is replica, for reason (a
// state check found it in the minority), and keeps it from starting again
// until it is moved off. Its data stays. A replica not running here, or
// another replica of g, is not fenced (ErrNotFenced says which).
func (s *Set) Fence(g slotstore.GroupID, replica uint64, reason string) error {
	if s.fences == nil {
		return errors.New("replicas: this node keeps no fence marks")
	}
	s.mu.Lock()
	r := s.Get(g)
	if r == nil || r.ReplicaID != replica {
		s.mu.Unlock()
		return fmt.Errorf("%w: group %d's replica %d does not run here", ErrNotFenced, g, replica)
	}
	shard := controller.ShardOf(g)
	reason = oneLine(reason)
	if err := s.fences.fence(shard, replica, reason); err != nil {
		s.mu.Unlock()
		return err
	}
	s.publish(func(m map[slotstore.GroupID]*Replica) { delete(m, g) })
	s.stopped[g] = time.Now()
	s.failed.failed(g, replica, &Fenced{Reason: reason}, time.Now())
	s.mu.Unlock()
	s.disrupt.forget(shard)
	err := s.cfg.NH.StopReplica(shard, replica)
	r.Proposer.Close()
	r.Reads.Close()
	if err != nil && !errors.Is(err, dragonboat.ErrShardNotFound) {
		return fmt.Errorf("replicas: stop fenced replica %d of group %d: %w", replica, g, err)
	}
	s.cfg.Logger.Error("replica fenced by a state check: stopped, its data kept until it is moved off", "group", g, "replica", replica, "reason", reason)
	return nil
}

// ErrNotFenced: the replica asked for does not run on this node.
var ErrNotFenced = errors.New("replicas: not fenced")

// isFenced reports a fence mark on replica of shard as a *Fenced error.
func (s *Set) isFenced(shard, replica uint64) error {
	if s.fences == nil {
		return nil
	}
	if reason, ok := s.fences.fenced(shard, replica); ok {
		return &Fenced{Reason: reason}
	}
	return nil
}
