package httpapi

import (
	"net/http"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
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

// writeKV answers a business key with its ETag.
func (a kvRoutes) writeKV(w http.ResponseWriter, r *http.Request, kv *meta.KV) {
	w.Header().Set("ETag", etag(kv.Revision))
	a.writeJSON(w, r, http.StatusOK, kvJSON{Key: kv.Key, Value: string(kv.Value), Revision: kv.Revision})
}

// putKV is PUT /v1/kv/{key}, a compare-and-set under If-Match or
// If-None-Match: *; a failed precondition answers 412.
func (a kvRoutes) putKV(w http.ResponseWriter, r *http.Request) error {
	key, err := pathParam(r, "key", keyProblem)
	if err != nil {
		return err
	}
	cond, err := kvCond(r, true)
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
	if len(res.Value) == 0 {
		return internalf("the write succeeded but its result carries no key")
	}
	kv, err := meta.DecodeKV(res.Value)
	if err != nil {
		return slotstore.Wrap(slotstore.CodeInternal, err, "decoding the written key")
	}
	a.writeKV(w, r, kv)
	return nil
}

// getKV is GET /v1/kv/{key}.
func (a kvRoutes) getKV(w http.ResponseWriter, r *http.Request) error {
	key, err := pathParam(r, "key", keyProblem)
	if err != nil {
		return err
	}
	c, f, err := readParams(r)
	if err != nil {
		return err
	}
	kv, err := read(a.api, w, r, target{key, f}, c, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(key), Key: key})
	if err != nil {
		return err
	}
	if kv == nil {
		return slotstore.Errorf(slotstore.CodeNotFound, "key %q not found", key)
	}
	a.writeKV(w, r, kv)
	return nil
}

// deleteKV is DELETE /v1/kv/{key}: 204, 404, or 412 under If-Match.
func (a kvRoutes) deleteKV(w http.ResponseWriter, r *http.Request) error {
	key, err := pathParam(r, "key", keyProblem)
	if err != nil {
		return err
	}
	cond, err := kvCond(r, false)
	if err != nil {
		return err
	}
	return a.remove(w, r, key, &meta.DeleteKV{Key: key, Cond: cond})
}
