package controller

import "github.com/slotmeta/slotmeta/internal/slotstore"

// A cluster whose nodes were given no secret (on loopback) authenticates
// peer RPC with one generated at bootstrap: the founding node whose
// Bootstrap command wins carries a random secret in it, every node adopts
// the state's secret (and keeps it in its data directory), and a joining
// node receives it with the rest of the state, through the authenticated
// join. A cluster bootstrapped before secrets were generated is given one
// by its controller leader (SetPeerSecret). The first secret stays: there is
// no rotation of a generated secret (give one with --cluster-secret-file to
// rotate).

// MinPeerSecretBytes is the shortest generated secret accepted.
const MinPeerSecretBytes = 32

// SetPeerSecret gives a bootstrapped cluster without a generated secret one.
type SetPeerSecret struct {
	Secret string `json:"secret"`
}

func applySetPeerSecret(s *State, c *SetPeerSecret) Result {
	switch {
	case !s.Bootstrapped:
		return refuse(slotstore.CodeRouteNotReady, "cluster is not bootstrapped")
	case s.PeerSecret != "":
		return Result{OK: true, Message: "the cluster has its secret"} // the first one stays
	case len(c.Secret) < MinPeerSecretBytes:
		return refuse(slotstore.CodeInvalidArgument, "a generated secret has at least %d bytes", MinPeerSecretBytes)
	}
	s.PeerSecret = c.Secret
	return Result{OK: true}
}
