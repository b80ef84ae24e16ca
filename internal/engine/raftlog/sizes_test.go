package raftlog

import "testing"

// The sizes are in force once the package is initialised: dragonboat's own
// initialisation (which sets its defaults) ran first and did not overwrite
// them.
func TestSizesAreInForce(t *testing.T) {
	want := ReplicaSizes{ProposalQueue: proposalQueue, ReadIndexQueue: readIndexQueue, ReceiveQueue: receiveQueue,
		EntrySlice: entrySlice, EntrySliceMinFree: entrySliceMinFree, ProposalShards: proposalShards,
		ConnSendBuffer: connBuffer, ConnReceiveBuffer: connBuffer}
	if got := Sizes(); got != want {
		t.Fatalf("sizes in force %+v, want %+v", got, want)
	}
	if entrySliceMinFree >= entrySlice {
		t.Fatalf("dragonboat panics unless the minimum free slice (%d) is below the slice (%d)", entrySliceMinFree, entrySlice)
	}
}
