package faults

import (
	_ "unsafe" // for go:linkname

	// The dragonboat package links internal/transport, whose constructor
	// newTCPTransport names.
	_ "github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
)

// newTCPTransport is dragonboat's default TCP transport, the one a NodeHost
// uses when Expert.TransportFactory is nil. dragonboat keeps its constructor
// in an internal package and offers no public way to build it, yet a custom
// TransportFactory replaces it entirely; reaching it by name is the only way
// to wrap the production transport instead of testing a substitute.
//
// The signature is that of config.TransportFactory.Create, and it must match
// the pinned module exactly (go.mod: github.com/lni/dragonboat/v4
// v4.0.0-20250723143628-076c7f6497dc, internal/transport/tcp.go). This file
// is test-only machinery: the production binary never imports package faults.
//
//go:linkname newTCPTransport github.com/lni/dragonboat/v4/internal/transport.NewTCPTransport
func newTCPTransport(nhConfig config.NodeHostConfig, requestHandler raftio.MessageHandler, chunkHandler raftio.ChunkHandler) raftio.ITransport
