package httpapi

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// systemUIDRoutes serves /v1/system-uids. The whole set is stored under one
// reserved route key (meta.SystemUIDsRouteKey): its route headers are that
// key's.
type systemUIDRoutes struct{ *api }

// systemUIDJSON is a system UID as the API shows it.
type systemUIDJSON struct {
	UID         string `json:"uid"`
	CreatedAtMs int64  `json:"created_at_ms"`
	Revision    uint64 `json:"revision"`
}

func systemUIDOut(s *meta.SystemUID) systemUIDJSON {
	return systemUIDJSON{UID: s.UID, CreatedAtMs: s.CreatedAtMs, Revision: s.Revision}
}

// systemUIDRow is a member of the set: DELETE /v1/system-uids/{uid}: 204,
// or 404.
var systemUIDRow = row[string, meta.SystemUID, systemUIDJSON]{
	noun: "system uid", path: userFromPath, key: func(string) string { return meta.SystemUIDsRouteKey },
	decode: meta.DecodeSystemUID, out: systemUIDOut,
	del: func(uid string) meta.Command { return &meta.RemoveSystemUID{UID: uid} },
}

// putSystemUID is PUT /v1/system-uids/{uid}: add to the set (200). Adding a
// member again changes nothing and answers it as it is.
func (a systemUIDRoutes) putSystemUID(w http.ResponseWriter, r *http.Request) error {
	return systemUIDRow.write(a.api, w, r, http.StatusOK, nil, func(uid string) (meta.Command, error) {
		return &meta.AddSystemUID{UID: uid}, nil
	})
}

// listSystemUIDs is GET /v1/system-uids?cursor=&limit=: the set in uid order.
func (a systemUIDRoutes) listSystemUIDs(w http.ResponseWriter, r *http.Request) error {
	lq, after, err := keyedListQuery(r, tagSystemUIDs, uidProblem)
	if err != nil {
		return err
	}
	q := &meta.ScanSystemUIDs{HashSlot: slotstore.HashSlotOfString(meta.SystemUIDsRouteKey), AfterUID: after, Limit: lq.limit}
	p, err := readWatchedPage(a.api, w, r, meta.SystemUIDsRouteKey, lq, q, noAnswer("ScanSystemUIDs"))
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, pageOf(p.UIDs, p.More, systemUIDOut,
		func(last *meta.SystemUID) string { return packCursor(tagSystemUIDs, []byte(last.UID)) }))
	return nil
}
