package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The console's group actions: create, split, merge and retire slot groups,
// each a controller task (retire aside) that the page then shows.

// formList parses a form field of comma-separated whole numbers below
// limit (empty: none).
func formList(r *http.Request, name string, limit uint64) ([]uint64, error) {
	v := strings.TrimSpace(r.PostForm.Get(name))
	if v == "" {
		return nil, nil
	}
	var out []uint64
	for _, part := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(part), 10, 64)
		if err != nil || n >= limit || len(out) == 256 {
			return nil, fmt.Errorf("%s: want numbers below %d separated by commas, got %q", name, limit, v)
		}
		out = append(out, n)
	}
	return out, nil
}

func formPeers(r *http.Request) ([]slotstore.NodeID, error) {
	ids, err := formList(r, "peers", 1<<32)
	var out []slotstore.NodeID
	for _, id := range ids {
		if id == 0 {
			return nil, fmt.Errorf("peers: node ids start at 1")
		}
		out = append(out, slotstore.NodeID(id))
	}
	return out, err
}

func (c groupPages) createGroup(w http.ResponseWriter, r *http.Request) (string, Flash) {
	peers, err := formPeers(r)
	if err != nil {
		return "/console/groups", Flash{Message: err.Error()}
	}
	t, err := c.src.CreateGroup(r.Context(), peers)
	if err != nil {
		return "/console/groups", Flash{Message: "Creating a group refused: " + errMessage(err)}
	}
	return groupHref(t.Group), Flash{OK: true, Message: fmt.Sprintf("Task %d started: create group %d.", t.ID, t.Group)}
}

func (c groupPages) splitGroup(r *http.Request, id slotstore.GroupID) (string, Flash) {
	list, err := formList(r, "slots", slotstore.HashSlotCount)
	if err != nil {
		return groupHref(id), Flash{Message: err.Error()}
	}
	peers, err := formPeers(r)
	if err != nil {
		return groupHref(id), Flash{Message: err.Error()}
	}
	slots := make([]slotstore.HashSlot, len(list))
	for i, v := range list {
		slots[i] = slotstore.HashSlot(v)
	}
	t, err := c.src.CreateSplit(r.Context(), id, slots, peers)
	if err != nil {
		return groupHref(id), Flash{Message: fmt.Sprintf("Splitting group %d refused: %s", id, errMessage(err))}
	}
	return groupHref(id), Flash{OK: true, Message: fmt.Sprintf("Task %d started: move %d hash slots of group %d into new group %d.",
		t.ID, len(t.HashSlots), id, t.ToGroup)}
}

func (c groupPages) mergeGroup(r *http.Request, id slotstore.GroupID) (string, Flash) {
	into, err := strconv.ParseUint(strings.TrimSpace(r.PostForm.Get("into")), 10, 32)
	if err != nil || into == 0 {
		return groupHref(id), Flash{Message: "into: want a group id"}
	}
	t, err := c.src.CreateMerge(r.Context(), id, slotstore.GroupID(into))
	if err != nil {
		return groupHref(id), Flash{Message: fmt.Sprintf("Merging group %d into group %d refused: %s", id, into, errMessage(err))}
	}
	return groupHref(slotstore.GroupID(into)), Flash{OK: true, Message: fmt.Sprintf("Task %d started: move the %d hash slots of group %d into group %d, then retire group %d.",
		t.ID, len(t.HashSlots), id, into, id)}
}

func (c groupPages) retireGroup(r *http.Request, id slotstore.GroupID) (string, Flash) {
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	if err := c.src.RetireGroup(ctx, id); err != nil {
		return groupHref(id), Flash{Message: fmt.Sprintf("Retiring group %d refused: %s", id, errMessage(err))}
	}
	return "/console/groups", Flash{OK: true, Message: fmt.Sprintf("Group %d retired: every node stops its replica and deletes its data.", id)}
}

// checkGroup runs a state check of the group now.
func (c groupPages) checkGroup(r *http.Request, id slotstore.GroupID) (string, Flash) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	got, err := c.src.Recovery().CheckGroup(ctx, id)
	if err != nil {
		return groupHref(id), Flash{Message: fmt.Sprintf("Checking group %d failed: %s", id, errMessage(err))}
	}
	msg := fmt.Sprintf("Checked group %d: %s.", id, describeCheck(got))
	if got.Action != "" {
		msg += " " + got.Action + "."
	}
	return groupHref(id), Flash{OK: !got.Verdict.Alarming(), Message: msg}
}
