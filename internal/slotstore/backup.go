package slotstore

import (
	"context"
	"time"
)

// BackupState is where a backup is.
type BackupState string

const (
	BackupRunning BackupState = "running"
	BackupDone    BackupState = "done"    // whole: its manifest is written
	BackupFailed  BackupState = "failed"  // stopped; its directory holds no manifest
	BackupPartial BackupState = "partial" // found on disk without a manifest and not running here
)

// Backup is one backup of the cluster, as the node that took it knows it
// (issue 29): running with its progress, or finished in its directory.
type Backup struct {
	ID    string      `json:"id"`
	State BackupState `json:"state"`
	// Dir is the backup's directory on the node that took it.
	Dir      string    `json:"dir"`
	Node     NodeID    `json:"node"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Groups, GroupsDone and Bytes are its progress: the groups it backs
	// up, those whose image is written, and the bytes written so far;
	// Percent is GroupsDone of Groups (100 once done).
	Groups     int     `json:"groups"`
	GroupsDone int     `json:"groups_done"`
	Bytes      int64   `json:"bytes"`
	Percent    float64 `json:"percent"`
	// ClusterID and RouteRevision say what was backed up.
	ClusterID     string `json:"cluster_id,omitempty"`
	RouteRevision uint64 `json:"route_revision,omitempty"`
	// Retakes counts group images taken again because a hash slot moved
	// between groups while the backup ran.
	Retakes int    `json:"retakes,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Backups is what an operator's tools need of a node's backups (issue 29):
// start one (a conflict while another runs on the node), list them newest
// first, read one (not_found).
type Backups interface {
	StartBackup(ctx context.Context) (Backup, error)
	Backups(ctx context.Context) ([]Backup, error)
	Backup(ctx context.Context, id string) (Backup, error)
}
