package meta

import (
	"fmt"
	"slices"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// RuntimeStatus is the lifecycle state of a channel's runtime meta.
type RuntimeStatus uint8

const (
	RuntimeActive    RuntimeStatus = 1 // serving
	RuntimeMigrating RuntimeStatus = 2 // a replica or leader move is in progress
	RuntimeDeleting  RuntimeStatus = 3 // the channel's log is being removed
)

var runtimeStatusNames = map[RuntimeStatus]string{
	RuntimeActive: "active", RuntimeMigrating: "migrating", RuntimeDeleting: "deleting",
}

// String is the status's API name ("status_<n>" for a value this binary
// does not know).
func (s RuntimeStatus) String() string {
	if n, ok := runtimeStatusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status_%d", uint8(s))
}

// ParseRuntimeStatus parses an API name.
func ParseRuntimeStatus(name string) (RuntimeStatus, bool) {
	for s, n := range runtimeStatusNames {
		if n == name {
			return s, true
		}
	}
	return 0, false
}

// Limits of runtime meta.
const (
	MaxReplicas          = 32
	MaxFenceTokenBytes   = 256
	MaxFenceReasonBytes  = 1024
	maxRuntimeFieldBytes = MaxStringBytes
)

// WriteFence blocks writes to a channel's log (for example while a
// migration switches leaders). An empty Token means no fence.
type WriteFence struct {
	Token   string
	Version uint64
	Reason  string
	UntilMs int64
}

// IsZero reports whether no fence is set.
func (f WriteFence) IsZero() bool { return f == WriteFence{} }

// ChannelRuntime is ChannelRuntimeMeta: who leads a channel's message log,
// its replicas and in-sync replicas, the epochs that fence stale leaders,
// its lease and retention boundary and its write fence. Its route key is
// the channel id; it lives under TableRuntime, independently of the
// channel's definition row.
//
// Writes are monotonic: (ChannelEpoch, LeaderEpoch) never goes back (an
// older pair is epoch_stale), one pair has one Leader (another leader at the
// same pair is a conflict), and LeaseUntilMs and RetentionThroughSeq only
// move forward.
type ChannelRuntime struct {
	ChannelType         uint8
	ChannelID           string
	ChannelEpoch        uint64
	LeaderEpoch         uint64
	Leader              uint64 // node id
	Replicas            []uint64
	ISR                 []uint64
	MinISR              uint64
	Status              RuntimeStatus
	LeaseUntilMs        int64
	RetentionThroughSeq uint64
	WriteFence          WriteFence
	CreatedAtMs         int64
	UpdatedAtMs         int64
	Revision            uint64
}

// codeClient walks the fields a client sets.
func (r *ChannelRuntime) codeClient(c *coder) {
	c.channelRef(&r.ChannelType, &r.ChannelID)
	c.uvarint(&r.ChannelEpoch)
	c.uvarint(&r.LeaderEpoch)
	c.uvarint(&r.Leader)
	c.u64s(&r.Replicas, MaxReplicas, "replicas")
	c.u64s(&r.ISR, MaxReplicas, "isr")
	c.uvarint(&r.MinISR)
	c.u8((*uint8)(&r.Status))
	c.varint(&r.LeaseUntilMs)
	c.uvarint(&r.RetentionThroughSeq)
	c.str(&r.WriteFence.Token, maxRuntimeFieldBytes, "write fence token")
	c.uvarint(&r.WriteFence.Version)
	c.str(&r.WriteFence.Reason, maxRuntimeFieldBytes, "write fence reason")
	c.varint(&r.WriteFence.UntilMs)
}

func (r *ChannelRuntime) code(c *coder) {
	c.version(entityVersion, "runtime")
	r.codeClient(c)
	c.stamps(&r.CreatedAtMs, &r.UpdatedAtMs, &r.Revision)
}

// EncodeChannelRuntime encodes r as a stored value.
func EncodeChannelRuntime(r *ChannelRuntime) []byte { return encodeEntity(r) }

// DecodeChannelRuntime decodes stored runtime meta (appended fields ignored).
func DecodeChannelRuntime(b []byte) (*ChannelRuntime, error) { return decodeEntity[ChannelRuntime](b) }

// RuntimeProblems lists what is wrong with the client fields of r, under
// their API names; nil if nothing. Both the API and the applier check it.
func RuntimeProblems(r *ChannelRuntime) []slotstore.FieldError {
	var out []slotstore.FieldError
	bad := func(field, format string, args ...any) {
		out = append(out, slotstore.FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	if p := ChannelRefProblem(r.ChannelType, r.ChannelID); p != "" {
		bad("channel", "%s", p)
	}
	if r.Leader == 0 {
		bad("leader", "must be a node id (at least 1)")
	}
	switch {
	case len(r.Replicas) == 0 || len(r.Replicas) > MaxReplicas:
		bad("replicas", "must hold 1 to %d node ids", MaxReplicas)
	case slices.Contains(r.Replicas, 0):
		bad("replicas", "node ids must be at least 1")
	case hasDup(r.Replicas):
		bad("replicas", "must not repeat a node id")
	case r.Leader != 0 && !slices.Contains(r.Replicas, r.Leader):
		bad("leader", "must be one of replicas")
	}
	switch {
	case len(r.ISR) == 0 || len(r.ISR) > len(r.Replicas):
		bad("isr", "must hold 1 to len(replicas) node ids")
	case hasDup(r.ISR):
		bad("isr", "must not repeat a node id")
	case slices.ContainsFunc(r.ISR, func(n uint64) bool { return !slices.Contains(r.Replicas, n) }):
		bad("isr", "must be a subset of replicas")
	case r.Leader != 0 && !slices.Contains(r.ISR, r.Leader):
		bad("isr", "must contain the leader")
	}
	if r.MinISR == 0 || r.MinISR > uint64(max(len(r.Replicas), 1)) {
		bad("min_isr", "must be 1 to len(replicas)")
	}
	if _, ok := runtimeStatusNames[r.Status]; !ok {
		bad("status", "must be one of active, migrating, deleting")
	}
	if r.LeaseUntilMs < 0 {
		bad("lease_until_ms", "must not be negative")
	}
	f := r.WriteFence
	if !f.IsZero() {
		if f.Token == "" || len(f.Token) > MaxFenceTokenBytes {
			bad("write_fence.token", "must be 1 to %d bytes", MaxFenceTokenBytes)
		}
		if len(f.Reason) > MaxFenceReasonBytes {
			bad("write_fence.reason", "must be at most %d bytes", MaxFenceReasonBytes)
		}
		if f.UntilMs < 0 {
			bad("write_fence.until_ms", "must not be negative")
		}
	}
	return out
}

func hasDup(vs []uint64) bool {
	for i, v := range vs {
		if slices.Contains(vs[i+1:], v) {
			return true
		}
	}
	return false
}

// Runtime commands (ops 60–69).
const (
	OpCreateRuntime    Op = 60
	OpPutRuntime       Op = 61
	OpDeleteRuntime    Op = 62
	OpAdvanceRetention Op = 63
)

// ChanRef names a channel whose own rows a command touches; the route key
// is ChannelID.
type ChanRef struct {
	ChannelType uint8
	ChannelID   string
}

// RouteKey is the channel id: every command about a channel's own rows
// routes by it.
func (r *ChanRef) RouteKey() string { return r.ChannelID }

func (r *ChanRef) code(c *coder) { c.channelRef(&r.ChannelType, &r.ChannelID) }

// CreateRuntime creates runtime meta; conflict if it exists.
type CreateRuntime struct {
	Header
	Runtime ChannelRuntime // client fields only
}

// PutRuntime is the monotonic upsert of runtime meta (see ChannelRuntime).
type PutRuntime struct {
	Header
	Runtime ChannelRuntime // client fields only
}

// DeleteRuntime deletes runtime meta.
type DeleteRuntime struct {
	Header
	ChanRef
}

// AdvanceRetention raises RetentionThroughSeq to ThroughSeq if the stored
// channel epoch and leader are the expected ones (conflict otherwise). A
// lower or equal ThroughSeq changes nothing and succeeds with the stored row.
type AdvanceRetention struct {
	Header
	ChanRef
	ExpectedChannelEpoch uint64
	ExpectedLeader       uint64
	ThroughSeq           uint64
}

func (*CreateRuntime) Op() Op    { return OpCreateRuntime }
func (*PutRuntime) Op() Op       { return OpPutRuntime }
func (*DeleteRuntime) Op() Op    { return OpDeleteRuntime }
func (*AdvanceRetention) Op() Op { return OpAdvanceRetention }

func (c *CreateRuntime) RouteKey() string { return c.Runtime.ChannelID }
func (c *PutRuntime) RouteKey() string    { return c.Runtime.ChannelID }

func (c *CreateRuntime) codeBody(k *coder) { c.Runtime.codeClient(k) }
func (c *PutRuntime) codeBody(k *coder)    { c.Runtime.codeClient(k) }
func (c *DeleteRuntime) codeBody(k *coder) { c.ChanRef.code(k) }

func (c *AdvanceRetention) codeBody(k *coder) {
	c.ChanRef.code(k)
	k.uvarint(&c.ExpectedChannelEpoch)
	k.uvarint(&c.ExpectedLeader)
	k.uvarint(&c.ThroughSeq)
}

// Runtime queries and answers.
const (
	QueryGetRuntime QueryKind = 60
	answerRuntime   uint8     = 60
)

// GetRuntime reads a channel's runtime meta. Answer: *ChannelRuntime or nil.
type GetRuntime struct {
	HashSlot slotstore.HashSlot
	ChanRef
}

func (*GetRuntime) Kind() QueryKind                 { return QueryGetRuntime }
func (q *GetRuntime) RouteSlot() slotstore.HashSlot { return q.HashSlot }
func (q *GetRuntime) codeQuery(c *coder)            { c.slot(&q.HashSlot); q.ChanRef.code(c) }

func init() {
	registerCommand[CreateRuntime]()
	registerCommand[PutRuntime]()
	registerCommand[DeleteRuntime]()
	registerCommand[AdvanceRetention]()
	registerQuery[GetRuntime]()
	registerEntityAnswer[ChannelRuntime](answerRuntime)
}
