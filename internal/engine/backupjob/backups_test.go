package backupjob

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// fakeHost holds a replica of every group; owns(g, n) says which slots
// group g's n-th image (from 1) owns, and table the routing table the
// controller's state shows on its n-th read.
type fakeHost struct {
	mu     sync.Mutex
	groups []slotstore.GroupID
	owns   func(g slotstore.GroupID, n int) []slotstore.HashSlot
	table  func(n int) []slotstore.GroupID
	images map[slotstore.GroupID]int
	reads  int
	// stateErrs answer the first reads of the controller's state.
	stateErrs []error
}

func (h *fakeHost) NodeID() slotstore.NodeID { return 1 }

func (h *fakeHost) ControllerState(context.Context) (*controller.State, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.stateErrs) > 0 {
		err := h.stateErrs[0]
		h.stateErrs = h.stateErrs[1:]
		return nil, err
	}
	h.reads++
	st := controller.NewState()
	st.ClusterID, st.PeerSecret, st.HashToGroup = "cluster-x", "secret", h.table(h.reads)
	for _, g := range h.groups {
		st.Groups[g] = &controller.Group{ID: g, Peers: map[slotstore.NodeID]uint64{1: 1}}
	}
	return st, nil
}

func (h *fakeHost) HasReplica(slotstore.GroupID) bool { return true }

func (h *fakeHost) LocalImage(_ context.Context, g slotstore.GroupID, w io.Writer) (fsm.ImageInfo, error) {
	h.mu.Lock()
	h.images[g]++
	n := h.images[g]
	h.mu.Unlock()
	if _, err := fmt.Fprintf(w, "image of group %d, take %d", g, n); err != nil {
		return fsm.ImageInfo{}, err
	}
	return fsm.ImageInfo{Group: g, AppliedIndex: uint64(10 * n), Owned: h.owns(g, n)}, nil
}

func (h *fakeHost) Leader(slotstore.GroupID) slotstore.NodeID { return 1 }
func (h *fakeHost) PeerAddr(slotstore.NodeID) string          { return "" }

func span(from, to int, skip ...int) []slotstore.HashSlot {
	var out []slotstore.HashSlot
	for s := from; s < to; s++ {
		if !slices.Contains(skip, s) {
			out = append(out, slotstore.HashSlot(s))
		}
	}
	return out
}

func halves(n int) []slotstore.GroupID {
	t := make([]slotstore.GroupID, slotstore.HashSlotCount)
	for i := range t {
		t[i] = 1 + slotstore.GroupID(i/128)
	}
	return t
}

func run(t *testing.T, h *fakeHost) (slotstore.Backup, *Runner) {
	t.Helper()
	r := New(Config{Host: h, Root: t.TempDir(), ChunkBytes: 16, RetakeRounds: 3, RetakePause: time.Millisecond})
	t.Cleanup(r.Close)
	b, err := r.StartBackup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.wg.Wait()
	b, err = r.Backup(context.Background(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	return b, r
}

// TestASlotMovingDuringTheBackup: slot 5 leaves group 1 before its image
// and reaches group 2 only after group 2's first: in no image. The group
// the controller now routes it to is imaged again, and the backup holds
// every slot once, with the second image of group 2 only.
func TestASlotMovingDuringTheBackup(t *testing.T) {
	h := &fakeHost{groups: []slotstore.GroupID{1, 2}, images: map[slotstore.GroupID]int{},
		owns: func(g slotstore.GroupID, n int) []slotstore.HashSlot {
			if g == 1 {
				return span(0, 128, 5)
			}
			if n == 1 {
				return span(128, 256)
			}
			return append(span(128, 256), 5)
		},
		table: func(n int) []slotstore.GroupID {
			t := halves(n)
			t[5] = 2
			return t
		}}
	b, _ := run(t, h)
	if b.State != slotstore.BackupDone || b.Retakes != 1 || b.Percent != 100 {
		t.Fatalf("backup %+v", b)
	}
	m, err := backup.Verify(b.Dir, backup.VerifyOptions{ClusterID: "cluster-x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Streams) != 3 || m.Groups[1].AppliedIndex != 20 {
		t.Fatalf("streams %+v, groups %+v (want group 2's second image only)", m.Streams, m.Groups)
	}
	r, _ := backup.Open(b.Dir, m, "controller")
	raw, _ := io.ReadAll(r)
	if strings.Contains(string(raw), "secret") {
		t.Fatalf("the peer secret is in the backup: %s", raw)
	}
	got, _ := backup.Open(b.Dir, m, m.Groups[1].Stream)
	img, _ := io.ReadAll(got)
	if string(img) != "image of group 2, take 2" {
		t.Fatalf("group 2's image %q", img)
	}
}

// TestSlotsThatNeverSettle: a slot in two images however often they are
// taken again fails the backup after the bounded rounds, saying which, and
// leaves no manifest.
func TestSlotsThatNeverSettle(t *testing.T) {
	h := &fakeHost{groups: []slotstore.GroupID{1, 2}, images: map[slotstore.GroupID]int{},
		owns: func(g slotstore.GroupID, n int) []slotstore.HashSlot {
			if g == 1 {
				return span(0, 129)
			}
			return span(128, 256)
		},
		table: halves}
	b, r := run(t, h)
	if b.State != slotstore.BackupFailed || !strings.Contains(b.Error, "after 3 rounds of images taken again, hash slots [hs128] are in two") || b.Retakes != 6 {
		t.Fatalf("backup %+v", b)
	}
	if _, err := backup.Verify(b.Dir, backup.VerifyOptions{}); err == nil {
		t.Fatal("a failed backup verifies")
	}
	// Listed again by a node that restarted: partial.
	r2 := New(Config{Host: h, Root: filepath.Dir(b.Dir)})
	defer r2.Close()
	if got, err := r2.Backup(context.Background(), b.ID); err != nil || got.State != slotstore.BackupPartial {
		t.Fatalf("after a restart: %+v %v", got, err)
	}
	_ = r
}

// TestARetiredGroup: a group merged away while the backup ran (its slots
// in its target's image too, the group gone from the controller) is left
// out, not imaged again.
func TestARetiredGroup(t *testing.T) {
	h := &fakeHost{groups: []slotstore.GroupID{1, 2, 3}, images: map[slotstore.GroupID]int{},
		owns: func(g slotstore.GroupID, n int) []slotstore.HashSlot {
			switch g {
			case 1:
				return span(0, 128)
			case 2:
				return span(128, 256)
			}
			return span(200, 210)
		},
		table: halves}
	h.table = func(n int) []slotstore.GroupID {
		if n > 1 {
			h.groups = []slotstore.GroupID{1, 2} // group 3 retired (under h.mu: ControllerState holds it)
		}
		return halves(n)
	}
	b, _ := run(t, h)
	if b.State != slotstore.BackupDone {
		t.Fatalf("backup %+v", b)
	}
	m, err := backup.Verify(b.Dir, backup.VerifyOptions{})
	if err != nil || len(m.Groups) != 2 || h.images[3] != 1 {
		t.Fatalf("groups %+v, %v; group 3 imaged %d times", m.Groups, err, h.images[3])
	}
}

// TestListingIsBounded: a node with more backup directories than a listing
// shows lists the newest, and still finds an older one by its id; an id
// that is a path is not looked up.
func TestListingIsBounded(t *testing.T) {
	root := t.TempDir()
	for i := range maxListed + 5 {
		if err := os.Mkdir(filepath.Join(root, fmt.Sprintf("20260101T%06dZ-aaaaaa", i)), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r := New(Config{Host: &fakeHost{}, Root: root})
	defer r.Close()
	list, _ := r.Backups(context.Background())
	if len(list) != maxListed || list[0].ID != fmt.Sprintf("20260101T%06dZ-aaaaaa", maxListed+4) || list[0].State != slotstore.BackupPartial {
		t.Fatalf("%d listed, the first %+v", len(list), list[0])
	}
	if b, err := r.Backup(context.Background(), "20260101T000000Z-aaaaaa"); err != nil || b.State != slotstore.BackupPartial {
		t.Fatalf("the oldest by id: %+v %v", b, err)
	}
	if _, err := r.Backup(context.Background(), "../x"); slotstore.ErrorCode(err) != slotstore.CodeNotFound {
		t.Fatalf("a path as an id: %v", err)
	}
}

// TestTheControllerElectingALeader: a read of the controller's state
// answered retryably (no leader while it elects one) is asked again, and
// the backup completes; a definite refusal fails it at once, saying so.
func TestTheControllerElectingALeader(t *testing.T) {
	whole := func(g slotstore.GroupID, n int) []slotstore.HashSlot {
		if g == 1 {
			return span(0, 128)
		}
		return span(128, 256)
	}
	notReady := &slotstore.Error{Code: slotstore.CodeRouteNotReady, Message: "g0: group has no leader right now"}
	h := &fakeHost{groups: []slotstore.GroupID{1, 2}, images: map[slotstore.GroupID]int{}, owns: whole, table: halves,
		stateErrs: []error{notReady, notReady, notReady}}
	if b, _ := run(t, h); b.State != slotstore.BackupDone || b.Percent != 100 {
		t.Fatalf("a backup through an election: %+v", b)
	}
	h = &fakeHost{groups: []slotstore.GroupID{1, 2}, images: map[slotstore.GroupID]int{}, owns: whole, table: halves,
		stateErrs: []error{notReady, slotstore.Errorf(slotstore.CodePermissionDenied, "no")}}
	if b, _ := run(t, h); b.State != slotstore.BackupFailed || !strings.Contains(b.Error, "read the controller's state: permission_denied") {
		t.Fatalf("a backup refused the controller's state: %+v", b)
	}
}
