package slotstore

import (
	"errors"
	"fmt"
	"math"
)

// SlotCounts is a count per hash slot — HashSlotCount of them, or none — as
// a node reports the operations its API served (NodeStatus). In JSON it is
// an array of numbers, as any []uint64 is; it is read by hand because the
// controller leader decodes two of them from every node's report every
// round, and encoding/json's reflection over 512 numbers a node was most of
// a round at 1 000 nodes (the simulator's profile: 25 of 45 s of CPU in
// encoding/json's decoding; 14 s with this). It reads what encoding/json
// reads into a []uint64 — integers in range, null elements as 0, any JSON
// white space — and keeps at most HashSlotCount elements, dropping the rest
// (a malformed count refuses the whole report a node sent; too many of
// them only lose heat data; FuzzSlotCounts holds it to encoding/json's
// answers). It is written as
// encoding/json writes any []uint64 (a MarshalJSON of its own would be
// compacted again by encoding/json: slower than none).
type SlotCounts []uint64

var errSlotCounts = errors.New("slot counts: want an array of unsigned integers")

// UnmarshalJSON reads an array of numbers, or null (nil).
func (c *SlotCounts) UnmarshalJSON(b []byte) error {
	i := skipSpace(b, 0)
	if rest := b[i:]; len(rest) >= 4 && string(rest[:4]) == "null" && skipSpace(b, i+4) == len(b) {
		*c = nil
		return nil
	}
	if i >= len(b) || b[i] != '[' {
		return errSlotCounts
	}
	out := make(SlotCounts, 0, HashSlotCount)
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		if skipSpace(b, i+1) != len(b) {
			return errSlotCounts
		}
		*c = out
		return nil
	}
	for {
		j := i
		for j < len(b) && b[j] != ',' && b[j] != ']' && !isSpace(b[j]) {
			j++
		}
		v, ok := parseCount(b[i:j])
		if !ok {
			return fmt.Errorf("%w: %q", errSlotCounts, b[i:j])
		}
		if len(out) < HashSlotCount {
			out = append(out, v) // more are read and dropped: heat data is not worth a whole report
		}
		i = skipSpace(b, j)
		if i >= len(b) {
			return errSlotCounts
		}
		if b[i] == ']' {
			if skipSpace(b, i+1) != len(b) {
				return errSlotCounts
			}
			*c = out
			return nil
		}
		if b[i] != ',' {
			return errSlotCounts
		}
		i = skipSpace(b, i+1)
	}
}

// parseCount reads a JSON integer literal in uint64's range (no sign,
// fraction, exponent or leading zero), or null as 0.
func parseCount(lit []byte) (uint64, bool) {
	if string(lit) == "null" {
		return 0, true
	}
	if len(lit) == 0 || (len(lit) > 1 && lit[0] == '0') {
		return 0, false
	}
	var v uint64
	for _, c := range lit {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false // out of range
		}
		v = v*10 + d
	}
	return v, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace is the index of the first byte at or after i that is not JSON
// white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}
