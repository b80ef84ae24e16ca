package checks

import (
	"encoding/binary"

	"fmt"
	"github.com/cespare/xxhash/v2"
	"slices"
	"strconv"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Answer is one replica's answer to a check: its digest, or why it gave
// none.
type Answer struct {
	Node      slotstore.NodeID
	ReplicaID uint64
	Digest    slotstore.ReplicaDigest
	Err       error
}

// Compare concludes a check from every replica's answer (one per replica
// of the group, answered or not). A digest held by more than half of them
// is the majority's; replicas with another digest are the minority. With
// no such digest and replicas that differ, there is no majority — nothing
// may be chosen automatically. Replicas that did not answer are neither.
func Compare(g slotstore.GroupID, id uint64, answers []Answer) slotstore.GroupCheck {
	out := slotstore.GroupCheck{Group: g, CheckID: id}
	count := map[uint64]int{}
	var sums []uint64 // distinct digests, in the order first seen
	for _, a := range answers {
		rc := slotstore.ReplicaCheck{Node: a.Node, ReplicaID: a.ReplicaID}
		if a.Err != nil {
			rc.Error = a.Err.Error()
		} else {
			s := Sum(a.Digest.Slots)
			rc.Digest, rc.TookMs = strconv.FormatUint(s, 16), a.Digest.TookMs
			for _, d := range a.Digest.Slots {
				rc.Rows += d.Rows
				rc.Bytes += d.Bytes
			}
			if count[s] == 0 {
				sums = append(sums, s)
			}
			count[s]++
			out.Index = max(out.Index, a.Digest.Index)
		}
		out.Replicas = append(out.Replicas, rc)
	}
	var majority uint64
	found := false
	for _, s := range sums {
		if 2*count[s] > len(answers) {
			majority, found = s, true
		}
	}
	switch {
	case len(sums) == 0:
		out.Verdict = slotstore.CheckIncomplete
	case len(sums) == 1 && found && count[majority] == len(answers):
		out.Verdict = slotstore.CheckConsistent
	case len(sums) == 1:
		out.Verdict = slotstore.CheckIncomplete
	case found:
		out.Verdict = slotstore.CheckDiverged
	default:
		out.Verdict = slotstore.CheckNoMajority
	}
	for i, a := range answers {
		if a.Err != nil {
			continue
		}
		agrees := Sum(a.Digest.Slots) == majority
		out.Replicas[i].Agrees = found && agrees
		if found && !agrees {
			out.Minority = append(out.Minority, a.Node)
		}
	}
	if len(sums) > 1 {
		out.Differing = differing(answers)
	}
	return out
}

// differing lists the hash slots whose digest is not the same on every
// replica that answered (a slot missing on one counts).
func differing(answers []Answer) []slotstore.HashSlot {
	seen := map[slotstore.HashSlot][]slotstore.SlotDigest{}
	n := 0
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		n++
		for _, d := range a.Digest.Slots {
			seen[d.Slot] = append(seen[d.Slot], d)
		}
	}
	var out []slotstore.HashSlot
	for s, ds := range seen {
		if len(ds) != n || slices.ContainsFunc(ds, func(d slotstore.SlotDigest) bool { return d != ds[0] }) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Describe says in one line what a check found, for logs and decisions.
func Describe(c slotstore.GroupCheck) string {
	switch c.Verdict {
	case slotstore.CheckConsistent:
		return fmt.Sprintf("group %d: %d replicas agree at index %d", c.Group, len(c.Replicas), c.Index)
	case slotstore.CheckIncomplete:
		return fmt.Sprintf("group %d: the replicas that answered agree at index %d; %d did not answer", c.Group, c.Index, unanswered(c))
	case slotstore.CheckDiverged:
		return fmt.Sprintf("group %d diverged at index %d: the replicas on nodes %v differ from the majority in hash slots %s", c.Group, c.Index, c.Minority, slotList(c.Differing))
	default:
		return fmt.Sprintf("group %d diverged at index %d with no majority: hash slots %s differ", c.Group, c.Index, slotList(c.Differing))
	}
}

func unanswered(c slotstore.GroupCheck) int {
	n := 0
	for _, r := range c.Replicas {
		if r.Error != "" {
			n++
		}
	}
	return n
}

// slotList names slots, the system records as "system", at most 16.
func slotList(slots []slotstore.HashSlot) string {
	s := ""
	for i, sl := range slots {
		if i == 16 {
			return s + fmt.Sprintf(" and %d more", len(slots)-16)
		}
		if i > 0 {
			s += ","
		}
		if sl == slotstore.SystemSlot {
			s += "system"
		} else {
			s += strconv.Itoa(int(sl))
		}
	}
	return s
}

// Sum is one hash over a replica's slot digests: replicas whose Sums are
// equal hold the same state (up to hash collisions).
func Sum(slots []slotstore.SlotDigest) uint64 {
	h := xxhash.New()
	var b [2 + 8 + 8 + 8]byte
	for _, s := range slots {
		binary.BigEndian.PutUint16(b[0:], uint16(s.Slot))
		binary.BigEndian.PutUint64(b[2:], s.Rows)
		binary.BigEndian.PutUint64(b[10:], s.Bytes)
		binary.BigEndian.PutUint64(b[18:], s.Hash)
		_, _ = h.Write(b[:])
	}
	return h.Sum64()
}
