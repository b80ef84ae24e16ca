package fsm

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// systemUIDApplier applies the system uid commands.
type systemUIDApplier struct{ *applier }

// addSystemUID adds a uid to the set; adding a member again writes nothing
// and answers the row as it is.
func (a systemUIDApplier) addSystemUID(c *meta.AddSystemUID) meta.Result {
	if c.UID == "" {
		return meta.Result{Code: slotstore.CodeInvalidArgument, Message: "empty system uid"}
	}
	key := meta.SystemUIDKey(a.sm.cfg.Group, c.HashSlot, c.UID)
	if old, found := readRow(a.applier, key, meta.DecodeSystemUID); found {
		return meta.Result{Revision: old.Revision, Value: meta.EncodeSystemUID(old)}
	}
	su := &meta.SystemUID{UID: c.UID, CreatedAtMs: c.TimeMs}
	return writeRow(a.applier, key, su, &su.Revision, meta.EncodeSystemUID)
}

func (a systemUIDApplier) removeSystemUID(c *meta.RemoveSystemUID) meta.Result {
	key := meta.SystemUIDKey(a.sm.cfg.Group, c.HashSlot, c.UID)
	if _, found := a.get(key); !found {
		return meta.Result{Code: slotstore.CodeNotFound, Message: fmt.Sprintf("%q is not a system uid", c.UID)}
	}
	a.del(key)
	return meta.Result{Revision: a.nextRevision()}
}

// scanSystemUIDs answers meta.ScanSystemUIDs: *meta.SystemUIDPage.
func (s reader) scanSystemUIDs(q *meta.ScanSystemUIDs) (*meta.SystemUIDPage, error) {
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	prefix := meta.TablePrefix(s.cfg.Group, q.HashSlot, meta.TableSystemUID)
	var lower []byte
	if q.AfterUID != "" {
		lower = after(meta.SystemUIDKey(s.cfg.Group, q.HashSlot, q.AfterUID))
	}
	page := &meta.SystemUIDPage{}
	var err error
	page.UIDs, page.More, err = appendPage(s.db, prefix, lower, scanLimit(q.Limit), page.UIDs, meta.DecodeSystemUID)
	if err != nil {
		return nil, err
	}
	return page, nil
}
