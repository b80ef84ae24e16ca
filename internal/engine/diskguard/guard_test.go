package diskguard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestLowUnderTheReserveUntilAQuarterAbove: the guard turns low under the
// reserve, stays low until the space left is a quarter of the reserve
// above it (no flapping), counts its ballast as free, gives the ballast up
// while low and writes it back once it is ok; a failed measure keeps
// the verdict; a negative reserve turns the guard off.
func TestLowUnderTheReserveUntilAQuarterAbove(t *testing.T) {
	dir := t.TempDir()
	var free uint64 = 100 << 20
	var fail error
	g := New(Config{Dir: dir, Reserve: 40 << 20, BallastBytes: 4 << 20, Now: func() time.Time { return time.Unix(100, 0) },
		Space: func(string) (uint64, uint64, error) { return free, 200 << 20, fail }})
	ballast := filepath.Join(dir, BallastFile)
	step := func(f uint64, wantLow, wantBallast bool) {
		t.Helper()
		free = f
		s, _ := g.Check()
		_, err := os.Stat(ballast)
		if s.Low != wantLow || (err == nil) != wantBallast || s.Full || g.Full() {
			t.Fatalf("free %d MiB: low %v ballast %v, want %v %v, not full (%+v)", f>>20, s.Low, err == nil, wantLow, wantBallast, s)
		}
		if (g.Refusal(7) != nil) != wantLow || (g.Reason() != "") != wantLow {
			t.Fatalf("free %d MiB: refusal %v reason %q", f>>20, g.Refusal(7), g.Reason())
		}
	}
	step(100<<20, false, true) // the ballast is written
	step(37<<20, false, true)  // 37 + 4 of ballast: 41 MiB, above the reserve
	step(35<<20, true, false)  // 39: low, the ballast given up
	step(45<<20, true, false)  // 45: not yet a quarter (10 MiB) above
	fail = errors.New("statfs failed")
	step(100<<20, true, false) // a failed measure proves nothing
	fail = nil
	step(51<<20, false, true) // 51 > 50: ok, and the ballast back (51 > 40 + 4)
	err := g.Refusal(7)
	if err != nil {
		t.Fatal(err)
	}
	free = 1 << 20
	g.Check()
	if err := g.Refusal(7); slotstore.ErrorCode(err) != slotstore.CodeNoSpace || !strings.Contains(err.Error(), "node 7's disk is low") {
		t.Fatalf("the refusal: %v", err)
	}

	// Full under half the reserve (20 MiB), until 30 MiB.
	free = 60 << 20
	g.Check()
	full := func(f uint64, want bool) {
		t.Helper()
		free = f
		s, _ := g.Check()
		if s.Full != want || g.Full() != want || !s.Low || strings.Contains(g.Reason(), "store nothing") != want {
			t.Fatalf("free %d MiB: full %v, want %v (%+v, %q)", f>>20, s.Full, want, s, g.Reason())
		}
	}
	full(21<<20, false)
	full(19<<20, true)
	full(29<<20, true) // not yet a quarter of the reserve above the half
	full(31<<20, false)
	full(10<<20, true)
	free = 60 << 20
	if s, _ := g.Check(); s.Full || s.Low {
		t.Fatalf("free 60 MiB: %+v", s)
	}

	off := New(Config{Dir: t.TempDir(), Reserve: -1, Space: func(string) (uint64, uint64, error) { return 0, 1, nil }})
	if s, _ := off.Check(); s.Low || off.Refusal(1) != nil {
		t.Fatalf("a guard with no reserve: %+v", s)
	}
}
