package backupjob

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// stateTimeout bounds one read of the controller's state.
const stateTimeout = 10 * time.Second

func (r *Runner) runJob(b *slotstore.Backup) {
	err := r.take(b)
	if err != nil {
		r.cfg.Logger.Warn("backup failed", "backup", b.ID, "err", err)
	} else {
		r.cfg.Logger.Info("backup done", "backup", b.ID, "dir", b.Dir, "bytes", b.Bytes, "groups", b.Groups)
	}
	r.finish(b, err)
}

// take writes the whole backup b.
func (r *Runner) take(b *slotstore.Backup) error {
	ctx := r.ctx
	w, err := backup.Create(b.Dir, r.cfg.ChunkBytes)
	if err != nil {
		return err
	}
	st, err := r.state(ctx)
	if err != nil {
		return err
	}
	groups := slices.Sorted(maps.Keys(st.Groups))
	r.update(b, func(b *slotstore.Backup) {
		b.Groups, b.ClusterID, b.RouteRevision = len(groups), st.ClusterID, st.RouteRevision
	})
	j := &job{r: r, b: b, w: w, infos: map[slotstore.GroupID]fsm.ImageInfo{}, streams: map[slotstore.GroupID]string{}}
	for _, g := range groups {
		if err := j.image(ctx, st, g); err != nil {
			return err
		}
		r.update(b, func(b *slotstore.Backup) {
			b.GroupsDone++
			b.Percent = 100 * float64(b.GroupsDone) / float64(max(b.Groups, 1))
		})
	}
	// Every slot in exactly one image, or the groups a moving slot touched
	// taken again.
	for round := 1; ; round++ {
		missing, twice := coverage(j.infos)
		if len(missing) == 0 && len(twice) == 0 {
			break
		}
		if round > r.cfg.RetakeRounds {
			var what []string
			if len(missing) > 0 {
				what = append(what, "hash slots "+describe(missing)+" are in no image")
			}
			if len(twice) > 0 {
				what = append(what, "hash slots "+describe(slices.Sorted(maps.Keys(twice)))+" are in two")
			}
			return fmt.Errorf("%w: after %d rounds of images taken again, %s", errMoved, r.cfg.RetakeRounds, strings.Join(what, " and "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.cfg.RetakePause):
		}
		if st, err = r.state(ctx); err != nil {
			return err
		}
		again := map[slotstore.GroupID]bool{}
		for _, hs := range missing {
			if int(hs) < len(st.HashToGroup) && st.HashToGroup[hs] != 0 {
				again[st.HashToGroup[hs]] = true
			}
		}
		for _, owners := range twice {
			for _, g := range owners {
				again[g] = true
			}
		}
		for _, g := range slices.Sorted(maps.Keys(again)) {
			if _, exists := st.Groups[g]; !exists { // retired meanwhile: its slots are elsewhere
				if err := j.drop(g); err != nil {
					return err
				}
				continue
			}
			if err := j.image(ctx, st, g); err != nil {
				return err
			}
			r.update(b, func(b *slotstore.Backup) { b.Retakes++ })
		}
	}
	// The controller's state at the end: nodes, routes, groups, tasks and
	// the audit trail — the peer secret left out (a restored cluster makes
	// its own).
	if st, err = r.state(ctx); err != nil {
		return err
	}
	st.PeerSecret = ""
	sw, err := w.Stream("controller")
	if err != nil {
		return err
	}
	err = json.NewEncoder(r.progress(b, sw)).Encode(st)
	if cerr := sw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("the controller's state: %w", err)
	}
	m := backup.Manifest{ClusterID: st.ClusterID, BackupID: b.ID, Created: b.Started, RouteRevision: st.RouteRevision}
	for _, g := range slices.Sorted(maps.Keys(j.infos)) {
		info := j.infos[g]
		m.Groups = append(m.Groups, backup.GroupImage{Group: g, Stream: j.streams[g], AppliedIndex: info.AppliedIndex,
			Slots: info.Owned, Positions: info.Positions})
	}
	if _, err := w.Finish(m); err != nil {
		return err
	}
	r.update(b, func(b *slotstore.Backup) { b.ClusterID, b.RouteRevision = st.ClusterID, st.RouteRevision })
	return nil
}

// state reads the controller's state, bounded by stateTimeout: a read the
// controller answers retryably — it is electing a leader, which its read
// does not wait for (dragonboat answers ErrShardNotReady at once) — is
// asked again after a pause that doubles, from 50 ms to a second (a
// backup failed on one election: CI of 0587e5e).
func (r *Runner) state(ctx context.Context) (*controller.State, error) {
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		st, err := r.cfg.Host.ControllerState(ctx)
		if err == nil {
			return st, nil
		}
		if !slotstore.ErrorCode(err).Retryable() || sleepCtx(ctx, pause) != nil {
			return nil, fmt.Errorf("read the controller's state: %w", err)
		}
	}
}

// job is one backup's images as they are taken.
type job struct {
	r       *Runner
	b       *slotstore.Backup
	w       *backup.Writer
	infos   map[slotstore.GroupID]fsm.ImageInfo
	streams map[slotstore.GroupID]string
	seq     int // streams started, for unique names
}

// image takes group g's image (again), replacing the one taken before:
// from this node's replica if it has one, else from the group's leader,
// else from its other replicas, the first that gives a whole image.
func (j *job) image(ctx context.Context, st *controller.State, g slotstore.GroupID) error {
	ctx, cancel := context.WithTimeout(ctx, j.r.cfg.ImageTimeout)
	defer cancel()
	h := j.r.cfg.Host
	var sources []slotstore.NodeID
	if h.HasReplica(g) {
		sources = append(sources, h.NodeID())
	}
	if l := h.Leader(g); l != 0 && l != h.NodeID() {
		sources = append(sources, l)
	}
	if grp, ok := st.Groups[g]; ok {
		for _, id := range grp.PeerNodes() {
			if !slices.Contains(sources, id) && id != h.NodeID() {
				sources = append(sources, id)
			}
		}
	}
	var err error = slotstore.Errorf(slotstore.CodeRouteNotReady, "no node holds a replica of group %d", g)
	for _, src := range sources {
		j.seq++
		name := fmt.Sprintf("group-%d-%d", g, j.seq)
		sw, serr := j.w.Stream(name)
		if serr != nil {
			return serr
		}
		var info fsm.ImageInfo
		if src == h.NodeID() {
			info, err = h.LocalImage(ctx, g, j.r.serve.writer(ctx, j.r.progress(j.b, sw)))
		} else {
			info, err = j.r.remoteImage(ctx, src, g, j.r.progress(j.b, sw))
		}
		if cerr := sw.Close(); err == nil {
			err = cerr
		}
		if err == nil && info.Group != g {
			err = fmt.Errorf("node %d gave an image of group %d for group %d", src, info.Group, g)
		}
		if err != nil {
			j.r.cfg.Logger.Warn("backup: a group's image failed", "backup", j.b.ID, "group", g, "from", src, "err", err)
			if derr := j.w.Discard(name); derr != nil {
				return derr
			}
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if old, ok := j.streams[g]; ok {
			if err := j.w.Discard(old); err != nil {
				return err
			}
		}
		j.infos[g], j.streams[g] = info, name
		return nil
	}
	return fmt.Errorf("group %d's image: %w", g, err)
}

// drop forgets group g's image (a group retired while the backup ran).
func (j *job) drop(g slotstore.GroupID) error {
	if name, ok := j.streams[g]; ok {
		if err := j.w.Discard(name); err != nil {
			return err
		}
	}
	delete(j.infos, g)
	delete(j.streams, g)
	return nil
}

// coverage lists the hash slots no image owns and those two or more do
// (with their owners).
func coverage(infos map[slotstore.GroupID]fsm.ImageInfo) (missing []slotstore.HashSlot, twice map[slotstore.HashSlot][]slotstore.GroupID) {
	owners := make([][]slotstore.GroupID, slotstore.HashSlotCount)
	for g, info := range infos {
		for _, hs := range info.Owned {
			owners[hs] = append(owners[hs], g)
		}
	}
	twice = map[slotstore.HashSlot][]slotstore.GroupID{}
	for hs, o := range owners {
		switch {
		case len(o) == 0:
			missing = append(missing, slotstore.HashSlot(hs))
		case len(o) > 1:
			twice[slotstore.HashSlot(hs)] = o
		}
	}
	return missing, twice
}
