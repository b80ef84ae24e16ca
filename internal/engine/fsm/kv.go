package fsm

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// kvApplier applies the business-key commands.
type kvApplier struct{ *applier }

// checkCond evaluates a compare-and-set precondition against the current row.
func checkCond(c meta.Cond, cur *meta.KV) (ok bool, why string) {
	switch c.Kind {
	case meta.CondNone:
		return true, ""
	case meta.CondIfAbsent:
		if cur != nil {
			return false, fmt.Sprintf("key exists at revision %d", cur.Revision)
		}
	case meta.CondIfExists:
		if cur == nil {
			return false, "key does not exist"
		}
	case meta.CondIfRevision:
		if cur == nil {
			return false, fmt.Sprintf("key does not exist (expected revision %d)", c.Revision)
		}
		if cur.Revision != c.Revision {
			return false, fmt.Sprintf("key is at revision %d, expected %d", cur.Revision, c.Revision)
		}
	}
	return true, ""
}

func failedPrecondition(why string, cur *meta.KV) meta.Result {
	r := meta.Result{Code: slotstore.CodeFailedPrecondition, Message: why}
	if cur != nil {
		r.Revision = cur.Revision
	}
	return r
}

func (a kvApplier) putKV(c *meta.PutKV) meta.Result {
	key := meta.KVKey(a.sm.cfg.Group, c.HashSlot, c.Key)
	cur, _ := readRow(a.applier, key, meta.DecodeKV)
	if ok, why := checkCond(c.Cond, cur); !ok {
		return failedPrecondition(why, cur)
	}
	kv := &meta.KV{Key: c.Key, Value: c.Value, UpdatedAtMs: c.TimeMs, Revision: a.nextRevision()}
	kv.CreateRevision = kv.Revision
	if cur != nil {
		kv.CreateRevision = cur.CreateRevision
	}
	v := meta.EncodeKV(kv)
	a.set(key, v)
	return meta.Result{Revision: kv.Revision, Value: v}
}

func (a kvApplier) deleteKV(c *meta.DeleteKV) meta.Result {
	key := meta.KVKey(a.sm.cfg.Group, c.HashSlot, c.Key)
	cur, _ := readRow(a.applier, key, meta.DecodeKV)
	if ok, why := checkCond(c.Cond, cur); !ok {
		return failedPrecondition(why, cur)
	}
	if cur == nil {
		return meta.Result{Code: slotstore.CodeNotFound, Message: "key not found"}
	}
	a.del(key)
	return meta.Result{Revision: a.nextRevision()}
}
