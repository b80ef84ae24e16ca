package routing_test

import (
	"bytes"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

func FuzzUnmarshalTable(f *testing.F) {
	for _, n := range []int{1, 3, 8, 256} {
		tb, _ := routing.InitialTable(n)
		b, _ := tb.MarshalBinary()
		f.Add(b)
	}
	b, _ := mustTable(f, 1<<40, rotatedGroups(7, 5)).MarshalBinary()
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add(b[:len(b)-1])

	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := routing.UnmarshalTable(data)
		if err != nil {
			if tb != nil {
				t.Fatalf("UnmarshalTable returned a table with error %v", err)
			}
			return
		}
		if tb.Revision() == 0 {
			t.Fatal("decoded a table with revision 0")
		}
		for s, g := range tb.Groups() {
			if g == 0 {
				t.Fatalf("decoded a table with hash slot %d unmapped", s)
			}
		}
		enc, err := tb.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		// The encoding is fixed-size and canonical: it must reproduce the input.
		if !bytes.Equal(enc, data) {
			t.Fatalf("re-encoding differs from the accepted input")
		}
		tb2, err := routing.UnmarshalTable(enc)
		if err != nil {
			t.Fatalf("re-encoded table does not decode: %v", err)
		}
		if tb2.Revision() != tb.Revision() || tb2.Groups() != tb.Groups() {
			t.Fatal("round trip changed the table")
		}
	})
}
