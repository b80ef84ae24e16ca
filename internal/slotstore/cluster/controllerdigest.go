package cluster

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore/controller"
)

// controllerDigest is st's digest (controller.State.Digest) in hex, kept
// for the latest state: hashing it costs a JSON round trip.
func (n *Node) controllerDigest(st *controller.State) string {
	if d := n.ctrlDigest.Load(); d != nil && d.st == st {
		return d.sum
	}
	sum, err := st.Digest()
	if err != nil {
		return "error: " + err.Error()
	}
	d := &stateDigest{st: st, sum: fmt.Sprintf("%016x", sum)}
	n.ctrlDigest.Store(d)
	return d.sum
}

// stateDigest is a controller state's digest.
type stateDigest struct {
	st  *controller.State
	sum string
}
