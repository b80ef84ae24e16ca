package raftnet

import (
	"context"
	"errors"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
)

// Silent is a transport that neither listens nor sends: a NodeHost opened
// on a stopped node's data to read or rewrite a replica offline (the
// controller's lost-quorum recovery) must not be heard by the running
// nodes, nor hear them, nor take its Raft port.
type Silent struct{}

var _ config.TransportFactory = Silent{}

// errSilent is every send's error.
var errSilent = errors.New("raftnet: an offline NodeHost sends nothing")

// Create implements config.TransportFactory.
func (Silent) Create(config.NodeHostConfig, raftio.MessageHandler, raftio.ChunkHandler) raftio.ITransport {
	return silent{}
}

// Validate implements config.TransportFactory: any address dragonboat's
// own transport takes.
func (Silent) Validate(addr string) bool { return Transport{}.Validate(addr) }

type silent struct{}

func (silent) Name() string { return "silent" }
func (silent) Start() error { return nil }
func (silent) Close() error { return nil }
func (silent) GetConnection(context.Context, string) (raftio.IConnection, error) {
	return nil, errSilent
}
func (silent) GetSnapshotConnection(context.Context, string) (raftio.ISnapshotConnection, error) {
	return nil, errSilent
}
