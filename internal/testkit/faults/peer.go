package faults

import (
	"fmt"
	"net"
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// PeerTransport returns a wrapper for node self's peer RPC client transport
// (the shape of cluster.Config.WrapPeerTransport). Targets are peer RPC
// addresses; register them first.
//
// A request whose direction self → target is cut (or lost) fails before it
// is sent, as a dial error: the caller knows the peer never saw it. A reply
// whose direction target → self is cut (or lost) is discarded after the peer
// has acted on the request, and the caller gets a connection error: like a
// real one-way loss, it cannot know whether the request took effect.
func (n *Network) PeerTransport(self slotstore.NodeID) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return &roundTripper{base: base, net: n, self: self}
	}
}

type roundTripper struct {
	base http.RoundTripper
	net  *Network
	self slotstore.NodeID
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	to := rt.net.NodeOf(req.URL.Host)
	if !rt.net.Deliver(rt.self, to) {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper always closes the body
		}
		if rt.net.hang.Load() {
			<-req.Context().Done() // the packets vanish; only the deadline ends the wait
			return nil, &net.OpError{Op: "read", Net: "tcp", Addr: addrOf(req.URL.Host),
				Err: fmt.Errorf("node %d → %s: %w (hung until %w)", rt.self, req.URL.Host, ErrBlocked, req.Context().Err())}
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: addrOf(req.URL.Host),
			Err: fmt.Errorf("node %d → %s: %w", rt.self, req.URL.Host, ErrBlocked)}
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if !rt.net.Deliver(to, rt.self) {
		_ = resp.Body.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Addr: addrOf(req.URL.Host),
			Err: fmt.Errorf("reply of %s to node %d: %w", req.URL.Host, rt.self, ErrBlocked)}
	}
	return resp, nil
}

// CloseIdleConnections passes through, so http.Client.CloseIdleConnections
// still reaches the base transport.
func (rt *roundTripper) CloseIdleConnections() {
	if c, ok := rt.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
