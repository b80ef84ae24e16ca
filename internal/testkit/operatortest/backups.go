package operatortest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Backups is the fake node's backups (slotstore.Backups): StartBackup
// starts one running (a conflict while one runs), Finish ends it; every
// call is recorded in the fake's Calls.
type Backups struct {
	f *Fake

	mu   sync.Mutex
	list []slotstore.Backup // newest first
}

// Backups returns the fake's backups.
func (f *Fake) Backups() slotstore.Backups {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.backups == nil {
		f.backups = &Backups{f: f}
	}
	return f.backups
}

func (b *Backups) StartBackup(context.Context) (slotstore.Backup, error) {
	b.f.Record("StartBackup")
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, x := range b.list {
		if x.State == slotstore.BackupRunning {
			return slotstore.Backup{}, slotstore.Errorf(slotstore.CodeConflict, "backup %s is running on this node: one at a time", x.ID)
		}
	}
	now := time.Unix(1_800_000_000+int64(len(b.list)), 0).UTC()
	x := slotstore.Backup{ID: fmt.Sprintf("%s-%02d", now.Format("20060102T150405Z"), len(b.list)), State: slotstore.BackupRunning,
		Dir: "/backups/" + now.Format("20060102T150405Z"), Node: b.f.Self, Started: now, Groups: 2}
	b.list = append([]slotstore.Backup{x}, b.list...)
	return x, nil
}

func (b *Backups) Backups(context.Context) ([]slotstore.Backup, error) {
	b.f.Record("Backups")
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.list), nil
}

func (b *Backups) Backup(_ context.Context, id string) (slotstore.Backup, error) {
	b.f.Record("Backup")
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, x := range b.list {
		if x.ID == id {
			return x, nil
		}
	}
	return slotstore.Backup{}, slotstore.Errorf(slotstore.CodeNotFound, "no backup %q on node %d", id, b.f.Self)
}

// Finish ends the running backup: done with bytes, or failed with why.
func (b *Backups) Finish(bytes int64, failure string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.list {
		if x := &b.list[i]; x.State == slotstore.BackupRunning {
			x.Finished, x.Bytes = x.Started.Add(time.Second), bytes
			if failure != "" {
				x.State, x.Error = slotstore.BackupFailed, failure
			} else {
				x.State, x.Percent, x.GroupsDone = slotstore.BackupDone, 100, x.Groups
			}
		}
	}
}
