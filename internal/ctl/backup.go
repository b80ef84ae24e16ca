package ctl

import (
	"time"

	"github.com/slotmeta/slotmeta/client"
)

// backup start [--wait]: POST /v1/cluster/backups on the first endpoint's
// node (the backup is written there); --wait follows it until it ends,
// within --timeout, and exits 1 if it failed.
func backupStart(c *cmd) int {
	wait := c.fs.Bool("wait", false, "follow the backup until it ends (within --timeout)")
	if _, code, ok := c.parse(); !ok {
		return code
	}
	r, err := c.api.StartBackupWithResponse(c.ctx)
	if _, code, ok := answered(c, r, err); !ok {
		return code
	}
	if !*wait {
		return c.show(r.Body, func(t *table) { backupTable(t, r.JSON202) })
	}
	id := r.JSON202.Id
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		g, err := c.api.GetBackupWithResponse(c.ctx, id)
		if _, code, ok := answered(c, g, err); !ok {
			return code
		}
		if b := g.JSON200; b.State != client.BackupStateRunning {
			code := c.show(g.Body, func(t *table) { backupTable(t, b) })
			if b.State != client.BackupStateDone && code == exitOK {
				return exitFailure
			}
			return code
		}
		select {
		case <-c.ctx.Done():
			return c.netError(c.ctx.Err())
		case <-tick.C:
		}
	}
}

// backup list: GET /v1/cluster/backups, newest first.
func backupList(c *cmd) int {
	if _, code, ok := c.parse(); !ok {
		return code
	}
	r, err := c.api.ListBackupsWithResponse(c.ctx)
	return reply(c, r, err, func(t *table) {
		backupHeader(t)
		for i := range r.JSON200.Items {
			backupRow(t, &r.JSON200.Items[i])
		}
	})
}

// backup get ID: GET /v1/cluster/backups/{id}.
func backupGet(c *cmd) int {
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	r, err := c.api.GetBackupWithResponse(c.ctx, pos[0])
	return reply(c, r, err, func(t *table) { backupTable(t, r.JSON200) })
}

func backupTable(t *table, b *client.Backup) {
	backupHeader(t)
	backupRow(t, b)
}

func backupHeader(t *table) {
	t.header("ID", "STATE", "PERCENT", "GROUPS", "BYTES", "STARTED", "FINISHED", "DIR", "ERROR")
}

func backupRow(t *table, b *client.Backup) {
	finished := "-"
	if b.Finished != nil {
		finished = b.Finished.Format(time.RFC3339)
	}
	t.row(b.Id, b.State, b.Percent, b.GroupsDone, b.Bytes, b.Started.Format(time.RFC3339), finished, b.Dir, b.Error)
}
