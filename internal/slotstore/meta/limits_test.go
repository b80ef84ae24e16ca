package meta

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// The encoder checks what the decoder checks (one walk serves both), which
// dispatch relies on to refuse a bad command before it reaches the log.
// These tests hold it to that for every registered command type: a field
// over its limit fails EncodeCommand; and, for randomly filled commands,
// EncodeCommand fails exactly when DecodeCommand refuses the bytes an
// unchecked encoder writes, and what encodes decodes to the same bytes.

// overLimits are lengths over the limits of fields: most fields' (at most
// 64 KiB), else a row value's (MaxEntryBytes).
var overLimits = []int{MaxStringBytes + 1, MaxEntryBytes + 1}

// eachLimited calls f with the address of every string, byte string and
// list field of v (a pointer), recursively: the fields a codec limit bounds.
func eachLimited(v reflect.Value, f func(path string, field reflect.Value)) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			walk(path, v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				if sf := v.Type().Field(i); sf.IsExported() {
					walk(path+"."+sf.Name, v.Field(i))
				}
			}
		case reflect.String:
			f(path, v)
		case reflect.Slice:
			f(path, v)
			for i := range v.Len() {
				walk(path+"[]", v.Index(i))
			}
		}
	}
	walk("", v)
}

func TestEncodeCommandRefusesEveryOverLimitField(t *testing.T) {
	for _, op := range Ops() {
		c, _ := NewCommand(op)
		(&filler{}).fill(reflect.ValueOf(c))
		if _, err := EncodeCommand(c); err != nil {
			t.Fatalf("%T filled: %v", c, err)
		}
		var paths []string
		eachLimited(reflect.ValueOf(c), func(path string, _ reflect.Value) { paths = append(paths, path) })
		for i, path := range paths {
			var b []byte
			var err error
			var over Command
			for _, length := range overLimits {
				over = overField(op, i, length)
				if b, err = EncodeCommand(over); err != nil {
					break
				}
			}
			if err == nil || b != nil || !errors.Is(err, ErrLimit) {
				t.Errorf("%T with %s over its limit: %d bytes, %v", over, path, len(b), err)
				continue
			}
			if _, err := DecodeCommand(EncodeCommandUnchecked(over)); !errors.Is(err, ErrMalformed) {
				t.Errorf("%T with %s over its limit decoded: %v", over, path, err)
			}
		}
	}
}

// overField returns a filled command of op whose i-th limited field is
// length bytes long, or (a list) has more elements than any list limit.
func overField(op Op, i, length int) Command {
	c, _ := NewCommand(op)
	(&filler{}).fill(reflect.ValueOf(c))
	n := 0
	eachLimited(reflect.ValueOf(c), func(_ string, field reflect.Value) {
		if n++; n-1 != i {
			return
		}
		switch {
		case field.Kind() == reflect.String:
			field.SetString(strings.Repeat("x", length))
		case field.Type().Elem().Kind() == reflect.Uint8:
			field.SetBytes(bytes.Repeat([]byte{'x'}, length))
		default:
			long := reflect.MakeSlice(field.Type(), maxImportRows+1, maxImportRows+1)
			for j := range long.Len() {
				long.Index(j).Set(field.Index(j % field.Len()))
			}
			field.Set(long)
		}
	})
	return c
}

// randomFiller fills like filler, but with values on both sides of the
// limits and ranges the codec checks: lengths near every limit, every
// byte value (unknown enumerations), hash slots past the last, negative
// page sizes, long lists.
type randomFiller struct{ r *rand.Rand }

var limitLengths = []int{0, 1, 2, 32, 33, 64, 65, 128, 129, 256, 257, 512, 513, 577, 1024, 1025,
	MaxPluginConfigBytes, MaxPluginConfigBytes + 1, MaxStringBytes, MaxStringBytes + 1}

func (f *randomFiller) length() int {
	if f.r.IntN(5) > 0 {
		return 2 + f.r.IntN(3)
	}
	return limitLengths[f.r.IntN(len(limitLengths))]
}

func (f *randomFiller) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if f.r.IntN(4) == 0 {
			return // nil: an optional part left out
		}
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(bytes.Repeat([]byte{byte(f.r.Uint32())}, f.length()))
			return
		}
		n := f.r.IntN(3)
		if f.r.IntN(8) == 0 {
			n = []int{MaxReplicas, MaxReplicas + 1, MaxListUIDs, MaxListUIDs + 1}[f.r.IntN(4)]
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.fill(s.Index(i))
		}
		v.Set(s)
	case reflect.String:
		v.SetString(strings.Repeat("é", f.length()/2+f.length()%2))
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 1)
	case reflect.Uint8: // mostly a known enumeration value
		if f.r.IntN(6) == 0 {
			v.SetUint(uint64(f.r.IntN(256)))
		} else {
			v.SetUint(uint64(f.r.IntN(4)))
		}
	case reflect.Uint16: // mostly a hash slot in range
		v.SetUint(uint64(f.r.IntN(256 + 20)))
	case reflect.Uint32:
		v.SetUint(uint64(f.r.Uint32()))
	case reflect.Uint64:
		v.SetUint(f.r.Uint64() >> f.r.IntN(64))
	case reflect.Int64:
		v.SetInt(int64(f.r.Uint64()) >> f.r.IntN(64))
	case reflect.Int:
		v.SetInt([]int64{-1, 0, 1, 1000, 1001, maxQueryLimit, maxQueryLimit + 1, MaxEntryBytes + 1}[f.r.IntN(8)])
	}
}

func TestEncodeCommandFailsExactlyWhenDecodeWould(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 1))
	rounds := 40
	if testing.Short() {
		rounds = 8
	}
	for _, op := range Ops() {
		encoded, refused := 0, 0
		for range rounds {
			c, _ := NewCommand(op)
			(&randomFiller{r}).fill(reflect.ValueOf(c).Elem())
			b, err := EncodeCommand(c)
			if err != nil {
				refused++
				if !errors.Is(err, ErrLimit) {
					t.Fatalf("%T: error %v does not wrap ErrLimit", c, err)
				}
				if got, derr := DecodeCommand(EncodeCommandUnchecked(c)); derr == nil {
					t.Fatalf("%T: EncodeCommand refused it (%v), DecodeCommand took it: %+v", c, err, got)
				}
				continue
			}
			encoded++
			got, err := DecodeCommand(b)
			if err != nil {
				t.Fatalf("%T encoded, then did not decode: %v\n%+v", c, err, c)
			}
			if again, err := EncodeCommand(got); err != nil || !bytes.Equal(again, b) {
				t.Fatalf("%T: decoded command encodes to other bytes (%v)", c, err)
			}
		}
		t.Logf("op %d: %d encoded, %d refused", op, encoded, refused)
	}
}
