package contract

import (
	"net/http"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// genBackups drives the backups of a node through the generated client: a
// backup started (202 and its Location), followed until done, listed, read
// alone; an unknown one is not found.
func genBackups(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	start, err := c.StartBackupWithResponse(ctx)
	genCheck(t, "start a backup", start, err, http.StatusAccepted)
	b := start.JSON202
	if b.Id == "" || b.Dir == "" || b.Node == 0 || start.HTTPResponse.Header.Get("Location") != "/v1/cluster/backups/"+b.Id {
		t.Fatalf("the backup started: %+v, Location %q", b, start.HTTPResponse.Header.Get("Location"))
	}
	var done client.Backup
	testutil.WaitUntil(t, 30*time.Second, 20*time.Millisecond, "the backup to end", func() bool {
		got, err := c.GetBackupWithResponse(ctx, b.Id)
		genCheck(t, "a backup", got, err, http.StatusOK)
		done = *got.JSON200
		return done.State != client.BackupStateRunning
	})
	if done.State != client.BackupStateDone || done.Percent != 100 || done.Groups != 4 || done.GroupsDone != 4 || done.Bytes == 0 ||
		done.Finished == nil || done.ClusterId == nil || *done.ClusterId == "" {
		t.Fatalf("the backup ended %+v", done)
	}
	list, err := c.ListBackupsWithResponse(ctx)
	genCheck(t, "backups", list, err, http.StatusOK)
	if l := list.JSON200; len(l.Items) != 1 || l.Items[0].Id != b.Id || l.Items[0].State != client.BackupStateDone || l.NextCursor != "" {
		t.Fatalf("backups: %+v", l)
	}
	missing, err := c.GetBackupWithResponse(ctx, "20000101T000000Z-000000")
	genCheck(t, "a missing backup", missing, err, http.StatusNotFound)
}

// genRecovery asks a one-node cluster for a lost-quorum recovery through
// the generated client: refused without the confirmation (400) and for a
// group whose quorum stands (412); the node's reports list empty.
func genRecovery(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	no, err := c.RecoverGroupWithResponse(ctx, 1, client.RecoverRequest{})
	genCheck(t, "a recovery not confirmed", no, err, http.StatusBadRequest)
	genCheckErr(t, "a recovery not confirmed", no.JSON400, client.ErrorCodeInvalidArgument)
	held, err := c.RecoverGroupWithResponse(ctx, 1, client.RecoverRequest{AcceptDataLoss: true})
	genCheck(t, "a recovery of a group with its quorum", held, err, http.StatusPreconditionFailed)
	genCheckErr(t, "a recovery of a group with its quorum", held.JSON412, client.ErrorCodeFailedPrecondition)
	list, err := c.ListRecoveriesWithResponse(ctx)
	genCheck(t, "recoveries", list, err, http.StatusOK)
	if l := list.JSON200; len(l.Items) != 0 || l.NextCursor != "" {
		t.Fatalf("recoveries: %+v", l)
	}
	// A state check of the node's one replica of group 1 agrees with
	// itself; the group's view then shows it; an unknown group is 404.
	chk, err := c.CheckGroupWithResponse(ctx, 1)
	genCheck(t, "a state check", chk, err, http.StatusOK)
	if k := chk.JSON200; k.Verdict != client.GroupCheckVerdictConsistent || len(*k.Replicas) != 1 || !(*k.Replicas)[0].Agrees || k.Index == 0 || (*k.Replicas)[0].Digest == nil {
		t.Fatalf("a state check: %+v", k)
	}
	view, err := c.GetGroupWithResponse(ctx, 1)
	genCheck(t, "the checked group", view, err, http.StatusOK)
	if v := view.JSON200; v.LastCheck == nil || v.LastCheck.CheckId != chk.JSON200.CheckId {
		t.Fatalf("the group's view after a check: %+v", v.LastCheck)
	}
	none, err := c.CheckGroupWithResponse(ctx, 99)
	genCheck(t, "a state check of no group", none, err, http.StatusNotFound)
}
