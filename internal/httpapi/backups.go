package httpapi

import (
	"net/http"
	"regexp"

	"github.com/go-chi/chi/v5"
)

// backupRoutes serves the backups this node takes (issue 29) under
// /v1/cluster/backups: starting one (202, then followed by its id), the
// list, one. Admin only, reads included: a backup is the whole cluster's
// data, and its directory is named.
type backupRoutes struct{ *api }

// startBackup is POST /v1/cluster/backups.
func (a backupRoutes) startBackup(w http.ResponseWriter, r *http.Request) error {
	b, err := a.op.Backups().StartBackup(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/cluster/backups/"+b.ID)
	a.writeJSON(w, r, http.StatusAccepted, b)
	return nil
}

// listBackups is GET /v1/cluster/backups (newest first, whole).
func (a backupRoutes) listBackups(w http.ResponseWriter, r *http.Request) error {
	list, err := a.op.Backups().Backups(r.Context())
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, whole(list))
	return nil
}

// backupID is what a backup's id looks like (backups.Runner makes them).
var backupID = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._-]{0,63}$`)

// getBackup is GET /v1/cluster/backups/{id}.
func (a backupRoutes) getBackup(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if !backupID.MatchString(id) {
		return invalidField("id", "a backup id: letters, digits, '.', '_' or '-', at most 64")
	}
	return a.reply(w, r, http.StatusOK)(a.op.Backups().Backup(r.Context(), id))
}
