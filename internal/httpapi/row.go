package httpapi

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// row is a resource stored under one route key and addressed by its path:
// a user, a business key, a device, a channel and its runtime meta, a
// membership, … . Its handlers differ only in what the path names (K),
// which query and commands they build from that, and how the entity E is
// shown (J), so the flow of a get, a write and a delete is here once. A
// write that takes more than a path and a body (a body that must agree
// with the path) parses it itself and ends in answer.
type row[K, E, J any] struct {
	noun    string                         // "user", "CMD binding" (for messages)
	path    func(*http.Request) (K, error) // the identity in the path
	key     func(K) string                 // its route key
	decode  func([]byte) (*E, error)       // the entity a command answers with
	out     func(*E) J                     // the entity as the API shows it
	get     func(K) meta.For[*E]           // nil: no GET
	missing func(K) error                  // get's 404
	del     func(K) meta.Command           // nil: no plain DELETE
	// Optional headers of an answer:
	etag     func(*E) uint64 // the revision its ETag shows
	location func(*E) string // where a created entity lives (a 201's Location)
}

// sameKey is the route key of a row named by its route key (a uid, a key).
func sameKey(k string) string { return k }

// notFound is a 404 whose message is made by format and args.
func notFound(format string, args ...any) error {
	return slotstore.Errorf(slotstore.CodeNotFound, format, args...)
}

// optionalBody is the body of a write that may come without one: dst is
// decoded only when present says the request has a body.
type optionalBody struct {
	dst     any
	present func(*http.Request) bool
}

// write is proposeAt for the row in the path; it answers status with the
// row the command wrote or found.
func (rw row[K, E, J]) write(a *api, w http.ResponseWriter, r *http.Request, status int, body any, build func(K) (meta.Command, error)) error {
	res, err := proposeAt(a, w, r, rw.path, rw.key, body, build)
	if err != nil {
		return err
	}
	return rw.answer(a, w, r, status, res)
}

// proposeAt is the flow of a write to what a path names: it parses the
// path and the write headers, decodes body (nil: there is none; an
// optionalBody: maybe), and proposes the command build makes for the route
// key of what the path names.
func proposeAt[K any](a *api, w http.ResponseWriter, r *http.Request, path func(*http.Request) (K, error), key func(K) string,
	body any, build func(K) (meta.Command, error)) (meta.Result, error) {
	k, err := path(r)
	if err != nil {
		return meta.Result{}, err
	}
	idemKey, f, err := writeHeaders(r)
	if err != nil {
		return meta.Result{}, err
	}
	if opt, ok := body.(optionalBody); ok {
		body = nil
		if opt.present(r) {
			body = opt.dst
		}
	}
	if body != nil {
		if err := a.decode(w, r, body); err != nil {
			return meta.Result{}, err
		}
	}
	cmd, err := build(k)
	if err != nil {
		return meta.Result{}, err
	}
	return a.propose(w, r, target{key(k), f}, idemKey, cmd)
}

// writeWith serves a write of the row in the path whose command is built
// from the path and a body B alone: 200 with the row it wrote or found.
func writeWith[B, K, E, J any](a *api, rw row[K, E, J], build func(K, *B) meta.Command) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req B
		return rw.write(a, w, r, http.StatusOK, &req, func(k K) (meta.Command, error) { return build(k, &req), nil })
	}
}

// create is a POST that creates a row named in its body: the write
// headers, body, the command build makes (with its route key) proposed, 201
// with the row.
func (rw row[K, E, J]) create(a *api, w http.ResponseWriter, r *http.Request, body any, build func() (key string, cmd meta.Command, err error)) error {
	idemKey, f, err := a.writeBody(w, r, body)
	if err != nil {
		return err
	}
	key, cmd, err := build()
	if err != nil {
		return err
	}
	res, err := a.propose(w, r, target{key, f}, idemKey, cmd)
	if err != nil {
		return err
	}
	return rw.answer(a, w, r, http.StatusCreated, res)
}

// answer decodes the row a successful command wrote or found and answers
// it with status.
func (rw row[K, E, J]) answer(a *api, w http.ResponseWriter, r *http.Request, status int, res meta.Result) error {
	v, err := resultEntity(res, rw.noun, rw.decode)
	if err != nil {
		return err
	}
	rw.show(a, w, r, status, v)
	return nil
}

// show answers v with status: with its ETag, and a created row's Location,
// where the row has them.
func (rw row[K, E, J]) show(a *api, w http.ResponseWriter, r *http.Request, status int, v *E) {
	if rw.etag != nil {
		w.Header().Set("ETag", etag(rw.etag(v)))
	}
	if rw.location != nil && status == http.StatusCreated {
		w.Header().Set("Location", rw.location(v))
	}
	a.writeJSON(w, r, status, rw.out(v))
}

// fetch serves a GET of the row in the path: 200 with it, or its 404.
func (rw row[K, E, J]) fetch(a *api) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		k, err := rw.path(r)
		if err != nil {
			return err
		}
		c, f, err := readParams(r)
		if err != nil {
			return err
		}
		v, err := read(a, w, r, target{rw.key(k), f}, c, rw.get(k))
		if err != nil {
			return err
		}
		if v == nil {
			return rw.missing(k)
		}
		rw.show(a, w, r, http.StatusOK, v)
		return nil
	}
}

// remove serves a DELETE of the row in the path: 204, or 404.
func (rw row[K, E, J]) remove(a *api) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		k, err := rw.path(r)
		if err != nil {
			return err
		}
		return a.remove(w, r, rw.key(k), rw.del(k))
	}
}

// resultEntity decodes the entity a successful command wrote.
func resultEntity[T any](res meta.Result, what string, decode func([]byte) (T, error)) (T, error) {
	var zero T
	if len(res.Value) == 0 {
		return zero, internalf("the write succeeded but its result carries no %s", what)
	}
	v, err := decode(res.Value)
	if err != nil {
		return zero, slotstore.Wrap(slotstore.CodeInternal, err, "decoding the written "+what)
	}
	return v, nil
}
