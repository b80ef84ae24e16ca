package cluster

import (
	"fmt"
	"sync/atomic"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
)

// digestCache keeps the digest (controller.State.Digest, in hex) of the
// latest controller state asked about: hashing one costs a JSON round trip,
// and GET /v1/cluster asks on every call.
type digestCache struct{ last atomic.Pointer[stateDigest] }

// stateDigest is a controller state's digest.
type stateDigest struct {
	st  *controller.State
	sum string
}

// of is st's digest.
func (c *digestCache) of(st *controller.State) string {
	if d := c.last.Load(); d != nil && d.st == st {
		return d.sum
	}
	sum, err := st.Digest()
	if err != nil {
		return "error: " + err.Error()
	}
	d := &stateDigest{st: st, sum: fmt.Sprintf("%016x", sum)}
	c.last.Store(d)
	return d.sum
}
