package restore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// DefaultBump is how far revisions and change-log positions move past the
// backed-up ones (etcd's advice for its --bump-revision: well past what the
// old cluster could have written after the backup).
const DefaultBump = 1_000_000_000

// StartIndex and StartTerm are where a restored replica's Raft log begins
// past (raftlog.Start): any index above 0 will do; the term is 2 so that
// the log is more up to date than any a replica bootstrapped new for the
// same group could have (its configuration entries are at term 1): such a
// replica, empty, can never win an election over the restored ones.
const (
	StartIndex = 1
	StartTerm  = 2
)

// Options say what to restore where.
type Options struct {
	From    string // the backup's directory
	DataDir string // the node's data directory: absent or empty
	NodeID  slotstore.NodeID
	// Members are the new cluster's founding members, this node among
	// them; ReplicationFactor its replicas per group (default 3).
	Members           []controller.Node
	ReplicationFactor int
	// ClusterID is the new cluster's id (default: the old one's with
	// "-restored-" and the backup id).
	ClusterID string
	// Bump moves revisions and change-log positions past the old
	// cluster's (default DefaultBump).
	Bump uint64
	// Store tunes the store laid out (nil: defaults).
	Store *store.Options
}

// EnsureDefaults fills the zero values.
func (o *Options) EnsureDefaults() {
	if o.ReplicationFactor == 0 {
		o.ReplicationFactor = 3
	}
	if o.Bump == 0 {
		o.Bump = DefaultBump
	}
}

// Validate checks the options.
func (o *Options) Validate() error {
	if o.From == "" || o.DataDir == "" {
		return errors.New("restore: a backup directory (--from) and a data directory (--data-dir) are needed")
	}
	if o.ReplicationFactor < 1 {
		return fmt.Errorf("restore: replication factor %d", o.ReplicationFactor)
	}
	found := false
	seen := map[slotstore.NodeID]bool{}
	for _, n := range o.Members {
		if n.ID == 0 || seen[n.ID] || n.RaftAddr == "" {
			return fmt.Errorf("restore: member %d is repeated, zero or without a raft address", n.ID)
		}
		seen[n.ID] = true
		found = found || n.ID == o.NodeID
	}
	if !found {
		return fmt.Errorf("restore: node %d is not among the founding members", o.NodeID)
	}
	return nil
}

// Layout lays the node's data directory out from the backup (package
// doc) and returns the seed it wrote. Every refusal comes before the data
// directory is touched; a failure afterwards removes what was written.
func Layout(ctx context.Context, o Options) (*Seed, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	m, err := backup.Verify(o.From, backup.VerifyOptions{})
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	old, err := controllerState(o.From, m)
	if err != nil {
		return nil, err
	}
	if err := checkEmpty(o.DataDir); err != nil {
		return nil, err
	}
	seed := plan(o, m, old)
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("restore: data directory: %w", err)
	}
	if err := lay(ctx, o, m, seed); err != nil {
		_ = os.RemoveAll(o.DataDir) // it was absent or empty: nothing of anyone else's goes
		return nil, err
	}
	return seed, nil
}

// controllerState reads the old cluster's controller state from the backup.
func controllerState(dir string, m *backup.Manifest) (*controller.State, error) {
	r, err := backup.Open(dir, m, "controller")
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer r.Close()
	st := controller.NewState()
	if err := json.NewDecoder(r).Decode(st); err != nil {
		return nil, fmt.Errorf("restore: the backup's controller state: %w", err)
	}
	return st, nil
}

// checkEmpty refuses a data directory that holds anything.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore: data directory: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("restore: data directory %s is not empty (a restore lays out a new node's data; remove it first)", dir)
	}
	return nil
}

// plan computes the seed: the same on every node given the same backup and
// members, but for the node's own log starts.
func plan(o Options, m *backup.Manifest, old *controller.State) *Seed {
	clusterID := o.ClusterID
	if clusterID == "" {
		clusterID = m.ClusterID + "-restored-" + m.BackupID
	}
	r := controller.Restore{FromCluster: m.ClusterID, BackupID: m.BackupID, RouteRevision: m.RouteRevision + o.Bump,
		HashToGroup: make([]slotstore.GroupID, slotstore.HashSlotCount), InitialGroupCount: old.InitialGroupCount,
		NextGroupID: old.NextGroupID, Audit: old.Audit, AuditSeq: old.AuditSeq}
	for _, gi := range m.Groups {
		r.Groups = append(r.Groups, gi.Group)
		for _, s := range gi.Slots {
			r.HashToGroup[s] = gi.Group // backup.Verify: every slot in exactly one image
		}
	}
	slices.Sort(r.Groups)
	members := slices.Clone(o.Members)
	slices.SortFunc(members, func(a, b controller.Node) int { return cmp.Compare(a.ID, b.ID) })
	ids := make([]slotstore.NodeID, len(members))
	addrs := map[slotstore.NodeID]string{}
	for i, n := range members {
		ids[i], addrs[n.ID] = n.ID, n.RaftAddr
	}
	s := &Seed{Format: seedFormat, ClusterID: clusterID, DeploymentID: DeploymentID(clusterID), NodeID: o.NodeID,
		Members: members, ReplicationFactor: o.ReplicationFactor, Controller: r}
	for _, p := range controller.Placement(r.Groups, ids, o.ReplicationFactor) {
		if !slices.Contains(p.Nodes, o.NodeID) {
			continue
		}
		st := Start{Group: p.Group, Replica: uint64(o.NodeID), Index: StartIndex, Term: StartTerm, Members: map[uint64]string{}}
		for _, n := range p.Nodes {
			st.Members[uint64(n)] = addrs[n] // replica ids are node ids at a founding
		}
		s.Starts = append(s.Starts, st)
	}
	return s
}

// lay writes the node's groups into its store, then the seed.
func lay(ctx context.Context, o Options, m *backup.Manifest, seed *Seed) error {
	db, err := store.Open(filepath.Join(o.DataDir, "store"), o.Store)
	if err != nil {
		return err
	}
	for _, st := range seed.Starts {
		if err = ctx.Err(); err != nil {
			break
		}
		if err = layGroup(o, m, db, st); err != nil {
			break
		}
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return seed.write(o.DataDir)
}

// layGroup recovers one group's image into db and rebases it.
func layGroup(o Options, m *backup.Manifest, db *store.DB, st Start) error {
	i := slices.IndexFunc(m.Groups, func(gi backup.GroupImage) bool { return gi.Group == st.Group })
	r, err := backup.Open(o.From, m, m.Groups[i].Stream)
	if err != nil {
		return fmt.Errorf("restore: group %d: %w", st.Group, err)
	}
	defer r.Close()
	sm := fsm.New(fsm.Config{Group: st.Group, DB: db})
	if _, err := sm.Open(nil); err != nil {
		return fmt.Errorf("restore: group %d: %w", st.Group, err)
	}
	if err := sm.RecoverFromSnapshot(io.Reader(r), nil); err != nil {
		return fmt.Errorf("restore: group %d's image: %w", st.Group, err)
	}
	if err := sm.Rebase(fsm.Rebase{Bump: o.Bump, Replica: st.Replica, Index: st.Index}); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}
