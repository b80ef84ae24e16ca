package httpapi

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// kvRoutes serves /v1/kv. A key is one URL-escaped path segment: a '/'
// inside it travels as %2F.
type kvRoutes struct{ *api }

// kvRequest is the body of PUT /v1/kv/{key}.
type kvRequest struct {
	Value string `json:"value" validate:"required,maxbytes=65536"`
}

// kvJSON is a business key as the API shows it; Revision is also its ETag.
type kvJSON struct {
	Key      string `json:"key"`
	Value    string `json:"value"`
	Revision uint64 `json:"revision"`
}

func kvOut(kv *meta.KV) kvJSON {
	return kvJSON{Key: kv.Key, Value: string(kv.Value), Revision: kv.Revision}
}

// keyFromPath returns {key}.
func keyFromPath(r *http.Request) (string, error) { return pathParam(r, "key", keyProblem) }

// kvRow is a business key, answered with its ETag: GET /v1/kv/{key}.
var kvRow = row[string, meta.KV, kvJSON]{
	noun: "key", path: keyFromPath, key: sameKey, decode: meta.DecodeKV, out: kvOut,
	get: func(key string) meta.For[*meta.KV] {
		return &meta.GetKV{HashSlot: slotstore.HashSlotOfString(key), Key: key}
	},
	missing: func(key string) error { return notFound("key %q not found", key) },
	etag:    func(kv *meta.KV) uint64 { return kv.Revision },
}

// kvWrite parses what a write of a business key names: the key, then its
// precondition (kvCond).
func kvWrite(r *http.Request, allowAbsent bool) (string, meta.Cond, error) {
	key, err := keyFromPath(r)
	if err != nil {
		return "", meta.Cond{}, err
	}
	cond, err := kvCond(r, allowAbsent)
	return key, cond, err
}

// putKV is PUT /v1/kv/{key}, a compare-and-set under If-Match or
// If-None-Match: *; a failed precondition answers 412.
func (a kvRoutes) putKV(w http.ResponseWriter, r *http.Request) error {
	key, cond, err := kvWrite(r, true)
	if err != nil {
		return err
	}
	var req kvRequest
	idemKey, f, err := a.writeBody(w, r, &req)
	if err != nil {
		return err
	}
	res, err := a.propose(w, r, target{key, f}, idemKey, &meta.PutKV{Key: key, Value: []byte(req.Value), Cond: cond})
	if err != nil {
		return err
	}
	return kvRow.answer(a.api, w, r, http.StatusOK, res)
}

// deleteKV is DELETE /v1/kv/{key}: 204, 404, or 412 under If-Match.
func (a kvRoutes) deleteKV(w http.ResponseWriter, r *http.Request) error {
	key, cond, err := kvWrite(r, false)
	if err != nil {
		return err
	}
	return a.remove(w, r, key, &meta.DeleteKV{Key: key, Cond: cond})
}
