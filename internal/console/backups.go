package console

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// backupPages serves this node's backups (admin only: a backup is the
// whole cluster's data): each one with its progress, refreshed while one
// runs, and the form that starts one.
type backupPages struct{ *console }

// BackupsProps is this node's backups, newest first, and the reports of
// the lost-quorum recoveries made through it.
type BackupsProps struct {
	Backups    []slotstore.Backup
	Recoveries []slotstore.RecoveryReport
	Err        string
	CanAct     bool
	Now        time.Time
}

func (c backupPages) backups(r *http.Request) BackupsProps {
	p := BackupsProps{CanAct: c.session(r).CanAct, Now: c.now(), Recoveries: c.src.Recovery().Recoveries()}
	list, err := c.src.Backups().Backups(r.Context())
	if err != nil {
		p.Err = errMessage(err)
	}
	p.Backups = list
	return p
}

func (c backupPages) backupsPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Backups", "backups", BackupsBody(c.backups(r)))
}

func (c backupPages) backupsFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, BackupsTable(c.backups(r)))
}

// startBackup starts a backup on this node.
func (c backupPages) startBackup(w http.ResponseWriter, r *http.Request) (string, Flash) {
	b, err := c.src.Backups().StartBackup(r.Context())
	if err != nil {
		return "/console/backups", Flash{Message: "Starting a backup refused: " + errMessage(err)}
	}
	return "/console/backups", Flash{OK: true, Message: fmt.Sprintf("Backup %s started, into %s.", b.ID, b.Dir)}
}

// backupState labels a backup's state, with its marker and class (as
// nodeHealth and groupHealthLabel do).
func backupState(b slotstore.Backup) (label, class string) {
	switch b.State {
	case slotstore.BackupDone:
		return "✔ done", "ok"
	case slotstore.BackupRunning:
		return "⟳ running", ""
	case slotstore.BackupFailed:
		return "✖ failed", "bad"
	}
	return "⚠ " + string(b.State), "bad"
}

// sizeOf is a byte count for people.
func sizeOf(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// sizeOfU is sizeOf for an unsigned count.
func sizeOfU(n uint64) string { return sizeOf(int64(min(n, math.MaxInt64))) }

func ms64(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// lossOf says what a recovery may have lost, for people.
func lossOf(r slotstore.RecoveryReport) string {
	if !r.MayBeLost {
		return "nothing known committed"
	}
	return fmt.Sprintf("entries %d–%d of %d hash slots (keys unknown)", r.LostFrom, r.LostTo, len(r.HashSlots))
}

// tombstonedOf lists a recovery's tombstoned replicas as node/replica.
func tombstonedOf(r slotstore.RecoveryReport) string {
	out := make([]string, len(r.Tombstoned))
	for i, t := range r.Tombstoned {
		out[i] = fmt.Sprintf("n%d/r%d", t.Node, t.Replica)
	}
	return strings.Join(out, ", ")
}
