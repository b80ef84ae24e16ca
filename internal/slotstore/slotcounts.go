package slotstore

import (
	"bytes"
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
	b = trimSpace(b)
	if string(b) == "null" {
		*c = nil
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return errSlotCounts
	}
	out := make(SlotCounts, 0, HashSlotCount)
	if rest := trimSpace(b[1 : len(b)-1]); len(rest) > 0 {
		for field := range bytes.SplitSeq(rest, []byte(",")) {
			v, ok := parseCount(trimSpace(field))
			if !ok {
				return fmt.Errorf("%w: %q", errSlotCounts, field)
			}
			if len(out) < HashSlotCount {
				out = append(out, v) // more are read and dropped: heat data is not worth a whole report
			}
		}
	}
	*c = out
	return nil
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

// trimSpace is b without JSON white space at either end: bytes.Trim(b,
// " \t\r\n") by hand — it runs on every element, and bytes.Trim's cutset
// made BenchmarkReportCounts 6 % slower (43.1 → 45.8 µs).
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
