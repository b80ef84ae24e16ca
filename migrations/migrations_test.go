package migrations

import (
	"errors"
	"testing"
)

func TestPending(t *testing.T) {
	list := []Migration{{Version: 1, Name: "a"}, {Version: 2, Name: "b"}, {Version: 3, Name: "c"}}
	for _, tc := range []struct {
		current uint32
		want    []uint32
		tooNew  bool
	}{
		{0, []uint32{1, 2, 3}, false},
		{1, []uint32{2, 3}, false},
		{3, nil, false},
		{4, nil, true},
	} {
		got, err := Pending(list, tc.current)
		if tc.tooNew {
			if !errors.Is(err, ErrTooNew) {
				t.Fatalf("current %d: err %v, want ErrTooNew", tc.current, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("current %d: %v", tc.current, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("current %d: got %d migrations, want %d", tc.current, len(got), len(tc.want))
		}
		for i := range got {
			if got[i].Version != tc.want[i] {
				t.Fatalf("current %d: migration %d is version %d, want %d", tc.current, i, got[i].Version, tc.want[i])
			}
		}
	}
}

func TestPendingRejectsGaps(t *testing.T) {
	if _, err := Pending([]Migration{{Version: 1}, {Version: 3}}, 0); err == nil {
		t.Fatal("a gap in versions was accepted")
	}
}

func TestAllIsOrdered(t *testing.T) {
	if _, err := Pending(All, 0); err != nil {
		t.Fatal(err)
	}
	if Latest() != uint32(len(All)) {
		t.Fatalf("Latest %d, len %d", Latest(), len(All))
	}
}
