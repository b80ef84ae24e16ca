package slotstore

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestSlotCountsRoundTrip: counts encoding/json writes are read back
// alike, by it into a []uint64 and by hand; a report's fields keep their
// JSON names.
func TestSlotCountsRoundTrip(t *testing.T) {
	full := make(SlotCounts, HashSlotCount)
	for i := range full {
		full[i] = uint64(i) * 1_000_003
	}
	full[255] = ^uint64(0)
	for _, c := range []SlotCounts{nil, {}, {0}, full} {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var std []uint64
		if err := json.Unmarshal(b, &std); err != nil || !slices.Equal(std, []uint64(c)) || (std == nil) != (c == nil) {
			t.Fatalf("%s read by encoding/json: %v %v", b, std, err)
		}
		var back SlotCounts
		if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back, c) || (back == nil) != (c == nil) {
			t.Fatalf("%s read back: %v %v", b, back, err)
		}
	}
	st := NodeStatus{Node: 2, SlotReads: SlotCounts{1, 2}}
	b, _ := json.Marshal(st)
	if !strings.Contains(string(b), `"slot_reads":[1,2]`) || strings.Contains(string(b), "slot_writes") {
		t.Fatalf("a report: %s", b)
	}
	var got NodeStatus
	if err := json.Unmarshal([]byte(`{"node":2,"slot_reads":[ 1 , null,3 ],"slot_writes":null}`), &got); err != nil ||
		!slices.Equal(got.SlotReads, SlotCounts{1, 0, 3}) || got.SlotWrites != nil {
		t.Fatalf("a report read: %+v %v", got, err)
	}
	too := "[" + strings.Repeat("1,", HashSlotCount) + "2]"
	if err := json.Unmarshal([]byte(`{"slot_reads":`+too+`}`), &got); err != nil || len(got.SlotReads) != HashSlotCount || got.SlotReads[HashSlotCount-1] != 1 {
		t.Fatalf("more counts than hash slots: %d read (%v), want the first %d", len(got.SlotReads), err, HashSlotCount)
	}
}

// FuzzSlotCounts holds the hand-written reader to encoding/json's reading
// of a []uint64: any JSON it reads, encoding/json reads alike (its first
// HashSlotCount elements); any JSON encoding/json reads, it reads; it never
// panics on anything (corpus: testdata/fuzz/FuzzSlotCounts).
func FuzzSlotCounts(f *testing.F) {
	for _, s := range []string{"[]", "null", "[1,2,3]", " [ 0 ,\n18446744073709551615\t] ", "[1.0]", "[-1]", "[1e3]", "[01]",
		"[18446744073709551616]", "[null,1]", "[1,]", "[,1]", "{}", `"x"`, "[1 2]", "[[1]]", "nul", "[1]x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ours SlotCounts
		err := ours.UnmarshalJSON(b)
		if !json.Valid(b) {
			return // encoding/json never hands a field invalid JSON
		}
		var std []uint64
		stdErr := json.Unmarshal(b, &std)
		if err == nil && (stdErr != nil || !slices.Equal(std[:min(len(std), HashSlotCount)], []uint64(ours)) || (std == nil) != (ours == nil)) {
			t.Fatalf("%q: read %v, encoding/json %v %v", b, ours, std, stdErr)
		}
		if stdErr == nil && err != nil {
			t.Fatalf("%q: refused (%v), encoding/json read %v", b, err, std)
		}
	})
}

// BenchmarkReportCounts: a node's report with full per-slot counters, as
// the controller leader decodes one from every node every round — with
// SlotCounts and, for comparison, with plain []uint64 fields.
func BenchmarkReportCounts(b *testing.B) {
	counts := make([]uint64, HashSlotCount)
	for i := range counts {
		counts[i] = uint64(i) * 7_919_113
	}
	body, err := json.Marshal(NodeStatus{Node: 3, AtMs: 1, Replicas: []ReplicaStatus{}, SlotReads: counts, SlotWrites: counts})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("SlotCounts", func(b *testing.B) {
		for b.Loop() {
			var st NodeStatus
			if err := json.Unmarshal(body, &st); err != nil || len(st.SlotWrites) != HashSlotCount {
				b.Fatal(err)
			}
		}
	})
	b.Run("[]uint64", func(b *testing.B) {
		for b.Loop() {
			var st struct {
				Node       NodeID          `json:"node"`
				AtMs       int64           `json:"at_ms"`
				Replicas   []ReplicaStatus `json:"replicas"`
				SlotReads  []uint64        `json:"slot_reads,omitempty"`
				SlotWrites []uint64        `json:"slot_writes,omitempty"`
			}
			if err := json.Unmarshal(body, &st); err != nil || len(st.SlotWrites) != HashSlotCount {
				b.Fatal(err)
			}
		}
	})
}
