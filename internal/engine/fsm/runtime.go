package fsm

import (
	"fmt"
	"strings"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// runtimeApplier applies the channel runtime metadata commands.
type runtimeApplier struct{ *applier }

func (a runtimeApplier) runtimeKey(hs slotstore.HashSlot, channelType uint8, channelID string) []byte {
	return meta.ChannelKey(a.sm.cfg.Group, hs, meta.TableRuntime, channelType, channelID)
}

func (a runtimeApplier) readRuntime(key []byte) (*meta.ChannelRuntime, []byte, bool) {
	return readRowRaw(a.applier, key, meta.DecodeChannelRuntime)
}

func (a runtimeApplier) writeRuntime(key []byte, r *meta.ChannelRuntime) meta.Result {
	return writeRow(a.applier, key, r, &r.Revision, meta.EncodeChannelRuntime)
}

// runtimeInvalid answers client fields that RuntimeProblems rejects.
func runtimeInvalid(r *meta.ChannelRuntime) (meta.Result, bool) {
	probs := meta.RuntimeProblems(r)
	if len(probs) == 0 {
		return meta.Result{}, false
	}
	parts := make([]string, len(probs))
	for i, p := range probs {
		parts[i] = p.Field + ": " + p.Reason
	}
	return invalidResult("invalid runtime meta: %s", strings.Join(parts, "; ")), true
}

// refused answers a refused write with the stored row, so a caller can see
// what it lost to.
func refused(code slotstore.Code, rev uint64, raw []byte, format string, args ...any) meta.Result {
	return meta.Result{Code: code, Message: fmt.Sprintf(format, args...), Revision: rev, Value: raw}
}

func (a runtimeApplier) createRuntime(c *meta.CreateRuntime) meta.Result {
	if res, bad := runtimeInvalid(&c.Runtime); bad {
		return res
	}
	key := a.runtimeKey(c.HashSlot, c.Runtime.ChannelType, c.Runtime.ChannelID)
	if old, raw, found := a.readRuntime(key); found {
		return refused(slotstore.CodeConflict, old.Revision, raw, "channel %d/%q has runtime meta", old.ChannelType, old.ChannelID)
	}
	r := c.Runtime
	r.CreatedAtMs, r.UpdatedAtMs = c.TimeMs, c.TimeMs
	return a.writeRuntime(key, &r)
}

// cmpEpochs orders (channel epoch, leader epoch) pairs lexicographically.
func cmpEpochs(a, b *meta.ChannelRuntime) int {
	switch {
	case a.ChannelEpoch != b.ChannelEpoch:
		return cmpU64(a.ChannelEpoch, b.ChannelEpoch)
	default:
		return cmpU64(a.LeaderEpoch, b.LeaderEpoch)
	}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// putRuntime is the monotonic upsert: an older (channel epoch, leader
// epoch) is epoch_stale; the same pair with another leader is a conflict;
// the lease and the retention boundary never move back (a lower value in
// the command keeps the stored one).
func (a runtimeApplier) putRuntime(c *meta.PutRuntime) meta.Result {
	if res, bad := runtimeInvalid(&c.Runtime); bad {
		return res
	}
	key := a.runtimeKey(c.HashSlot, c.Runtime.ChannelType, c.Runtime.ChannelID)
	r := c.Runtime
	r.CreatedAtMs, r.UpdatedAtMs = c.TimeMs, c.TimeMs
	if old, raw, found := a.readRuntime(key); found {
		switch cmpEpochs(&r, old) {
		case -1:
			return refused(slotstore.CodeEpochStale, old.Revision, raw,
				"epochs (channel %d, leader %d) are older than the stored (channel %d, leader %d)",
				r.ChannelEpoch, r.LeaderEpoch, old.ChannelEpoch, old.LeaderEpoch)
		case 0:
			if r.Leader != old.Leader {
				return refused(slotstore.CodeConflict, old.Revision, raw,
					"epochs (channel %d, leader %d) already have leader %d, not %d",
					r.ChannelEpoch, r.LeaderEpoch, old.Leader, r.Leader)
			}
		}
		r.CreatedAtMs = old.CreatedAtMs
		r.LeaseUntilMs = max(r.LeaseUntilMs, old.LeaseUntilMs)
		r.RetentionThroughSeq = max(r.RetentionThroughSeq, old.RetentionThroughSeq)
	}
	return a.writeRuntime(key, &r)
}

func (a runtimeApplier) existingRuntime(hs slotstore.HashSlot, ref *meta.ChanRef) (*meta.ChannelRuntime, []byte, []byte, *meta.Result) {
	if p := meta.ChannelRefProblem(ref.ChannelType, ref.ChannelID); p != "" {
		r := invalidResult("%s", p)
		return nil, nil, nil, &r
	}
	key := a.runtimeKey(hs, ref.ChannelType, ref.ChannelID)
	r, raw, found := a.readRuntime(key)
	if !found {
		return nil, nil, nil, rowNotFound("channel %d/%q has no runtime meta", ref.ChannelType, ref.ChannelID)
	}
	return r, raw, key, nil
}

func (a runtimeApplier) deleteRuntime(c *meta.DeleteRuntime) meta.Result {
	_, _, key, res := a.existingRuntime(c.HashSlot, &c.ChanRef)
	return a.deleteExisting(key, res)
}

// advanceRetention raises the retention boundary, guarded by the channel
// epoch and leader; a boundary at or below the stored one changes nothing.
func (a runtimeApplier) advanceRetention(c *meta.AdvanceRetention) meta.Result {
	r, raw, key, res := a.existingRuntime(c.HashSlot, &c.ChanRef)
	if res != nil {
		return *res
	}
	if r.ChannelEpoch != c.ExpectedChannelEpoch || r.Leader != c.ExpectedLeader {
		return refused(slotstore.CodeConflict, r.Revision, raw,
			"runtime meta is at channel epoch %d with leader %d, expected channel epoch %d with leader %d",
			r.ChannelEpoch, r.Leader, c.ExpectedChannelEpoch, c.ExpectedLeader)
	}
	if c.ThroughSeq <= r.RetentionThroughSeq {
		return unchangedResult(r.Revision, raw)
	}
	r.RetentionThroughSeq, r.UpdatedAtMs = c.ThroughSeq, c.TimeMs
	return a.writeRuntime(key, r)
}

func (s reader) getRuntime(q *meta.GetRuntime) (*meta.ChannelRuntime, error) {
	if err := s.checkRouted(q.HashSlot, q.ChannelID); err != nil {
		return nil, err
	}
	return getRow(s, meta.ChannelKey(s.cfg.Group, q.HashSlot, meta.TableRuntime, q.ChannelType, q.ChannelID), meta.DecodeChannelRuntime)
}
