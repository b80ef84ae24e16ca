package httpapi

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// runtimeRoutes serves /v1/channels/{channel_type}/{channel_id}/runtime.
type runtimeRoutes struct{ *api }

// runtimeRequest is the body of POST and PUT …/runtime. Cross-field rules
// (leader ∈ replicas, isr ⊆ replicas and holds the leader, min_isr ≤
// len(replicas)) are meta.RuntimeProblems'.
type runtimeRequest struct {
	ChannelEpoch        *uint64         `json:"channel_epoch" validate:"required"`
	LeaderEpoch         *uint64         `json:"leader_epoch" validate:"required"`
	Leader              uint64          `json:"leader" validate:"required,min=1"`
	Replicas            []uint64        `json:"replicas" validate:"required,min=1,max=32,dive,min=1"`
	ISR                 []uint64        `json:"isr" validate:"required,min=1,max=32,dive,min=1"`
	MinISR              uint64          `json:"min_isr" validate:"required,min=1,max=32"`
	Status              string          `json:"status" validate:"maxbytes=32"`
	LeaseUntilMs        int64           `json:"lease_until_ms" validate:"min=0"`
	RetentionThroughSeq uint64          `json:"retention_through_seq" validate:"min=0"`
	WriteFence          *writeFenceJSON `json:"write_fence"`
}

// writeFenceJSON is a write fence; null (or absent) is no fence.
type writeFenceJSON struct {
	Token   string `json:"token" validate:"required,maxbytes=256"`
	Version uint64 `json:"version" validate:"min=0"`
	Reason  string `json:"reason" validate:"maxbytes=1024"`
	UntilMs int64  `json:"until_ms" validate:"min=0"`
}

// runtime builds the runtime meta a request asks for, checking what the
// validate tags cannot.
func (q *runtimeRequest) runtime(channelType uint8, channelID string) (meta.ChannelRuntime, error) {
	rt := meta.ChannelRuntime{
		ChannelType: channelType, ChannelID: channelID,
		ChannelEpoch: *q.ChannelEpoch, LeaderEpoch: *q.LeaderEpoch, Leader: q.Leader,
		Replicas: q.Replicas, ISR: q.ISR, MinISR: q.MinISR, Status: meta.RuntimeActive,
		LeaseUntilMs: q.LeaseUntilMs, RetentionThroughSeq: q.RetentionThroughSeq,
	}
	if q.Status != "" {
		s, ok := meta.ParseRuntimeStatus(q.Status)
		if !ok {
			return rt, invalidField("status", "must be one of active, migrating, deleting")
		}
		rt.Status = s
	}
	if f := q.WriteFence; f != nil {
		rt.WriteFence = meta.WriteFence{Token: f.Token, Version: f.Version, Reason: f.Reason, UntilMs: f.UntilMs}
	}
	if probs := meta.RuntimeProblems(&rt); len(probs) > 0 {
		return rt, fieldErrors(probs...)
	}
	return rt, nil
}

// retentionRequest is the body of POST …/runtime/retention.
type retentionRequest struct {
	ExpectedChannelEpoch *uint64 `json:"expected_channel_epoch" validate:"required"`
	ExpectedLeader       uint64  `json:"expected_leader" validate:"required,min=1"`
	ThroughSeq           *uint64 `json:"through_seq" validate:"required"`
}

type writeFenceOut struct {
	Token   string `json:"token"`
	Version uint64 `json:"version"`
	Reason  string `json:"reason"`
	UntilMs int64  `json:"until_ms"`
}

type runtimeJSON struct {
	ChannelType         uint8          `json:"channel_type"`
	ChannelID           string         `json:"channel_id"`
	ChannelEpoch        uint64         `json:"channel_epoch"`
	LeaderEpoch         uint64         `json:"leader_epoch"`
	Leader              uint64         `json:"leader"`
	Replicas            []uint64       `json:"replicas"`
	ISR                 []uint64       `json:"isr"`
	MinISR              uint64         `json:"min_isr"`
	Status              string         `json:"status"`
	LeaseUntilMs        int64          `json:"lease_until_ms"`
	RetentionThroughSeq uint64         `json:"retention_through_seq"`
	WriteFence          *writeFenceOut `json:"write_fence"`
	CreatedAtMs         int64          `json:"created_at_ms"`
	UpdatedAtMs         int64          `json:"updated_at_ms"`
	Revision            uint64         `json:"revision"`
}

func runtimeOut(rt *meta.ChannelRuntime) runtimeJSON {
	out := runtimeJSON{
		ChannelType: rt.ChannelType, ChannelID: rt.ChannelID,
		ChannelEpoch: rt.ChannelEpoch, LeaderEpoch: rt.LeaderEpoch, Leader: rt.Leader,
		Replicas: nonNil(rt.Replicas), ISR: nonNil(rt.ISR), MinISR: rt.MinISR, Status: rt.Status.String(),
		LeaseUntilMs: rt.LeaseUntilMs, RetentionThroughSeq: rt.RetentionThroughSeq,
		CreatedAtMs: rt.CreatedAtMs, UpdatedAtMs: rt.UpdatedAtMs, Revision: rt.Revision,
	}
	if f := rt.WriteFence; !f.IsZero() {
		out.WriteFence = &writeFenceOut{Token: f.Token, Version: f.Version, Reason: f.Reason, UntilMs: f.UntilMs}
	}
	return out
}

func nonNil(vs []uint64) []uint64 {
	if vs == nil {
		return []uint64{}
	}
	return vs
}

// runtimeRow is a channel's runtime meta,
// /v1/channels/{channel_type}/{channel_id}/runtime: GET answers it; DELETE:
// 204, or 404.
var runtimeRow = row[meta.ChanRef, meta.ChannelRuntime, runtimeJSON]{
	noun: "runtime meta", path: chanRefFromPath, key: channelKey, decode: meta.DecodeChannelRuntime, out: runtimeOut,
	get: func(c meta.ChanRef) meta.For[*meta.ChannelRuntime] {
		return &meta.GetRuntime{HashSlot: slotstore.HashSlotOfString(c.ChannelID), ChanRef: c}
	},
	missing: func(c meta.ChanRef) error {
		return notFound("channel %d/%q has no runtime meta", c.ChannelType, c.ChannelID)
	},
	del:      func(c meta.ChanRef) meta.Command { return &meta.DeleteRuntime{ChanRef: c} },
	location: func(rt *meta.ChannelRuntime) string { return channelPath(rt.ChannelType, rt.ChannelID, "/runtime") },
}

// runtimeWrite decodes a runtime request for the path's channel and proposes
// the command build makes of it.
func (a runtimeRoutes) runtimeWrite(w http.ResponseWriter, r *http.Request, status int, build func(meta.ChannelRuntime) meta.Command) error {
	var req runtimeRequest
	return runtimeRow.write(a.api, w, r, status, &req, func(c meta.ChanRef) (meta.Command, error) {
		rt, err := req.runtime(c.ChannelType, c.ChannelID)
		if err != nil {
			return nil, err
		}
		return build(rt), nil
	})
}

// createRuntime is POST …/runtime: 201, or 409 conflict if it exists.
func (a runtimeRoutes) createRuntime(w http.ResponseWriter, r *http.Request) error {
	return a.runtimeWrite(w, r, http.StatusCreated, func(rt meta.ChannelRuntime) meta.Command {
		return &meta.CreateRuntime{Runtime: rt}
	})
}

// putRuntime is PUT …/runtime, the monotonic upsert: 200; 409 epoch_stale
// for older (channel_epoch, leader_epoch); 409 conflict for the same epochs
// with another leader. A lease_until_ms or retention_through_seq below the
// stored one keeps the stored one (the answer shows what is stored).
func (a runtimeRoutes) putRuntime(w http.ResponseWriter, r *http.Request) error {
	return a.runtimeWrite(w, r, http.StatusOK, func(rt meta.ChannelRuntime) meta.Command {
		return &meta.PutRuntime{Runtime: rt}
	})
}

// advanceRetention is POST …/runtime/retention: 200; 409 conflict when the
// stored channel epoch or leader is not the expected one; a through_seq at
// or below the stored boundary answers 200 with the row unchanged.
func advanceRetention(c meta.ChanRef, req *retentionRequest) meta.Command {
	return &meta.AdvanceRetention{ChanRef: c,
		ExpectedChannelEpoch: *req.ExpectedChannelEpoch, ExpectedLeader: req.ExpectedLeader, ThroughSeq: *req.ThroughSeq}
}
