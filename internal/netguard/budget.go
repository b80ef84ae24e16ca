package netguard

import (
	"fmt"
	"syscall"
)

// Budget is how a node spends its file descriptors on connections: each
// listener's bound and that of one source address.
type Budget struct {
	Limit   uint64 // the descriptor limit it was derived from
	Reserve uint64 // kept for everything but accepted connections
	API     Share
	Peer    Share
	Raft    Share
}

// Share is one listener's part of the budget.
type Share struct{ Max, PerSource int }

func (b Budget) String() string {
	return fmt.Sprintf("descriptors %d (%d kept for files and dialing): api %d (%d a source), peer %d (%d), raft %d (%d)",
		b.Limit, b.Reserve, b.API.Max, b.API.PerSource, b.Peer.Max, b.Peer.PerSource, b.Raft.Max, b.Raft.PerSource)
}

// Floors: even a tiny limit leaves each listener this much (the reserve
// then shrinks; a node that small was not going to serve a flood anyway).
const (
	minShare     = 64
	minPerSource = 16
	minReserve   = 512
	maxRaft      = 256
)

// BudgetFor splits limit descriptors: half of them (at least 512) kept for
// Pebble's files, the Raft log, the connections the node dials and the
// process's own; of the rest the API gets 60 %, peer RPC and Raft 20 % each.
// One source may hold a quarter of the API's and Raft's share and half of
// peer RPC's (a peer's calls come from one address, up to its in-flight
// bound of connections).
func BudgetFor(limit uint64) Budget {
	reserve := max(uint64(minReserve), limit/2)
	var avail uint64
	if limit > reserve {
		avail = limit - reserve
	}
	share := func(pct uint64, perSourceDiv int) Share {
		m := max(minShare, int(avail*pct/100))
		return Share{Max: m, PerSource: max(minPerSource, m/perSourceDiv)}
	}
	raft := share(20, 4)
	// Raft connections are few (about one per peer, and a snapshot's), and
	// each costs dragonboat's loop 2 MiB of buffers: at most maxRaft.
	raft.Max = min(raft.Max, maxRaft)
	raft.PerSource = min(raft.PerSource, max(minPerSource, raft.Max/4))
	return Budget{Limit: limit, Reserve: reserve, API: share(60, 4), Peer: share(20, 2), Raft: raft}
}

// DescriptorLimit is the process's soft limit of open files (Go raised it
// to the hard limit at start).
func DescriptorLimit() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, fmt.Errorf("netguard: descriptor limit: %w", err)
	}
	return r.Cur, nil
}

// ProcessBudget is BudgetFor the process's limit (1024 if it cannot be read).
func ProcessBudget() Budget {
	l, err := DescriptorLimit()
	if err != nil || l == 0 {
		l = 1024
	}
	return BudgetFor(l)
}
