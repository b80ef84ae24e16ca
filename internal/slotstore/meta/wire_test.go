package meta

import (
	"reflect"
	"testing"
)

func TestQueryWireRoundTrip(t *testing.T) {
	for _, q := range []Query{
		&GetUser{HashSlot: 7, UID: "u1"},
		&GetKV{HashSlot: 255, Key: "k/1"},
		&ScanUsers{FromSlot: 3, ToSlot: 9, AfterUID: "bob", Limit: 100},
		&ScanKV{FromSlot: 3, ToSlot: 9, Prefix: "app/", Start: "app/1", End: "app/9", AfterKey: "app/3", KeysOnly: true, Limit: 100},
	} {
		b := EncodeQuery(q)
		got, err := DecodeQuery(b)
		if err != nil || !reflect.DeepEqual(got, q) {
			t.Fatalf("%T: got %+v, %v", q, got, err)
		}
		for cut := 0; cut < len(b); cut++ {
			if _, err := DecodeQuery(b[:cut]); err == nil {
				t.Fatalf("%T cut at %d decoded", q, cut)
			}
		}
		if _, err := DecodeQuery(append(b, 0)); err == nil {
			t.Fatalf("%T with a trailing byte decoded", q)
		}
	}
	if _, err := DecodeQuery(EncodeQuery(&GetKV{HashSlot: 256, Key: "k"})); err == nil {
		t.Fatal("hash slot 256 decoded")
	}
}

func TestAnswerWireRoundTrip(t *testing.T) {
	u := &User{UID: "u", Name: "n", CreatedAtMs: 5, Revision: 9}
	for _, a := range []any{
		nil,
		u,
		&KV{Key: "k", Value: []byte("v"), Revision: 3, CreateRevision: 2},
		&UserPage{Users: []*User{u, {UID: "w"}}, More: true, LastSlot: 4, LastUID: "w"},
		&UserPage{},
	} {
		b, err := EncodeAnswer(a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeAnswer(b)
		if err != nil {
			t.Fatalf("%T: %v", a, err)
		}
		if !reflect.DeepEqual(got, a) {
			t.Fatalf("%T: got %+v", a, got)
		}
		for cut := 0; cut < len(b); cut++ {
			if _, err := DecodeAnswer(b[:cut]); err == nil {
				t.Fatalf("%T cut at %d decoded", a, cut)
			}
		}
	}
	if b, _ := EncodeAnswer((*User)(nil)); len(b) != 2 {
		t.Fatal("a typed nil user is not encoded as nil")
	}
	if _, err := EncodeAnswer(42); err == nil {
		t.Fatal("an unknown answer type encoded")
	}
}

func FuzzDecodeQueryAndAnswer(f *testing.F) {
	f.Add(EncodeQuery(&ScanUsers{FromSlot: 1, ToSlot: 2, AfterUID: "a", Limit: 3}))
	f.Add(EncodeQuery(&ScanKV{FromSlot: 1, ToSlot: 2, Prefix: "p", AfterKey: "p1", Limit: 3}))
	if kb, err := EncodeAnswer(&KVPage{KVs: []*KV{{Key: "p1", Value: []byte("v")}}, More: true}); err == nil {
		f.Add(kb)
	}
	b, _ := EncodeAnswer(&UserPage{Users: []*User{{UID: "x"}}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		if q, err := DecodeQuery(b); err == nil {
			if again, err := DecodeQuery(EncodeQuery(q)); err != nil || !reflect.DeepEqual(again, q) {
				t.Fatalf("query does not re-encode: %+v %v", q, err)
			}
		}
		if a, err := DecodeAnswer(b); err == nil {
			enc, err := EncodeAnswer(a)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecodeAnswer(enc); err != nil {
				t.Fatalf("answer does not re-decode: %v", err)
			}
		}
	})
}
