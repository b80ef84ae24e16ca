package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

// ScanKV lists the business keys of the hash slots [FromSlot, ToSlot] —
// all owned by one group — in (slot, key) order, starting after (FromSlot,
// AfterKey) ("" from FromSlot's start): the keys that begin with Prefix,
// are at or after Start and before End ("" bounds nothing). A key lives in
// the hash slot of its own hash, so a listing across the cluster walks
// every hash slot (the API's GET /v1/kv); within a slot keys are in byte
// order, and the bounds are where the scan seeks and stops. KeysOnly
// leaves the values out. A page holds at most Limit keys and stops early
// once its values pass ScanKVPageBytes. Answer: *KVPage.
type ScanKV struct {
	FromSlot, ToSlot   slotstore.HashSlot
	Prefix, Start, End string
	AfterKey           string
	KeysOnly           bool
	Limit              int
}

// ScanKVPageBytes bounds the values of one ScanKV page: a page of the
// largest values would otherwise be Limit × 64 KiB.
const ScanKVPageBytes = 4 << 20

// KVPage is ScanKV's answer: More is set when the scan stopped before the
// end of ToSlot (at Limit, or at ScanKVPageBytes).
type KVPage struct {
	KVs  []*KV
	More bool
}

// QueryScanKV is ScanKV's kind on the wire.
const QueryScanKV QueryKind = 112

const answerKVPage = 112

func (*ScanKV) Kind() QueryKind                 { return QueryScanKV }
func (q *ScanKV) RouteSlot() slotstore.HashSlot { return q.FromSlot }
func (*ScanKV) answer() *KVPage                 { return nil }

func (q *ScanKV) codeQuery(c *coder) {
	c.slot(&q.FromSlot)
	c.slot(&q.ToSlot)
	c.str(&q.Prefix, MaxKeyBytes, "prefix")
	c.str(&q.Start, MaxKeyBytes, "start")
	c.str(&q.End, MaxKeyBytes, "end")
	c.str(&q.AfterKey, MaxKeyBytes, "after key")
	c.bool(&q.KeysOnly)
	c.limit(&q.Limit, maxQueryLimit, "scan limit")
}

func (p *KVPage) code(c *coder) { page(c, &p.KVs, &p.More) }

// Bounds are where a ScanKV of one hash slot seeks to and stops before,
// as keys ("" end: no end): the latest of Prefix, Start and just after
// after, and the earliest of End and the end of Prefix.
func (q *ScanKV) Bounds(after string) (lower, upper string) {
	lower = max(q.Prefix, q.Start)
	if after != "" && after >= lower {
		lower = after + "\x00"
	}
	upper = q.End
	if q.Prefix != "" {
		if pe := string(PrefixEnd([]byte(q.Prefix))); pe != "" && (upper == "" || pe < upper) { // "": p is all 0xff
			upper = pe
		}
	}
	return lower, upper
}

func init() {
	registerQuery[ScanKV]()
	registerPageAnswer[KVPage](answerKVPage)
}
