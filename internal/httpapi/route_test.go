package httpapi

import (
	"net/http"
	"testing"
)

// setUint assigns header names directly, so they must already be in the
// canonical form h.Get looks up.
func TestHeaderNamesAreCanonical(t *testing.T) {
	for _, name := range []string{hdrHashSlot, hdrSlotGroup, hdrLeaderNode, hdrLeaderTerm, hdrConfigEpoch,
		hdrRouteRevision, hdrAppliedIndex, hdrServedBy, hdrReplayed} {
		if c := http.CanonicalHeaderKey(name); c != name {
			t.Errorf("header %q is not canonical (%q)", name, c)
		}
		h := http.Header{}
		setUint(h, name, 42)
		if h.Get(name) != "42" {
			t.Errorf("setUint(%q) not found by Get", name)
		}
	}
}
