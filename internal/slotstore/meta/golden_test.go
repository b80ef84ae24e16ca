package meta

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The golden files pin the byte format: stored values, commands, queries
// and answers are replicated state and on disk, so a refactoring of the
// codec must reproduce them to the bit. Every registered command, query and
// answer type is walked from the registries (a new type is covered without
// touching this file), filled richly by reflection, and encoded; so is every
// entity. Run with -update only when a format change is intended (never for
// an existing field: that needs a new version byte and a migration).

var update = flag.Bool("update", false, "rewrite testdata/golden/*.hex from the current encoders")

// filler sets every exported field of a value to a distinct, valid,
// non-zero value: strings and bytes with non-ASCII and NUL bytes, integers
// wide enough for multi-byte varints, negative times, two-element lists.
type filler struct{ n int }

func (f *filler) next() int { f.n++; return f.n }

func (f *filler) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		f.fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(fmt.Sprintf("b%d\x00\xff", f.next())))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			f.fill(s.Index(i))
		}
		v.Set(s)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d-é\x00", f.next()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Uint8: // every enumeration knows 1–3
		v.SetUint(uint64(1 + f.next()%3))
	case reflect.Uint16: // hash slots, device flags
		v.SetUint(uint64(f.next() % 250))
	case reflect.Uint32:
		v.SetUint(uint64(f.next()) * 100_003)
	case reflect.Uint64:
		v.SetUint(uint64(f.next()) * 0x12_3456_7891)
	case reflect.Int64:
		v.SetInt(-int64(f.next()) * 987_654_321)
	case reflect.Int: // limits, byte budgets, record counts
		v.SetInt(int64(f.next()) * 7)
	default:
		panic(fmt.Sprintf("golden: cannot fill a %v", v.Type()))
	}
}

func filled[T any](p *T) *T {
	(&filler{}).fill(reflect.ValueOf(p))
	return p
}

// goldenEncodeCommand encodes c, or reports false when c is not a command
// a replica would accept (the zero values of some commands are not).
func goldenEncodeCommand(c Command) ([]byte, bool) {
	b, err := EncodeCommand(c)
	if err != nil {
		return nil, false
	}
	_, err = DecodeCommand(b)
	return b, err == nil
}

type goldenLines struct {
	t     *testing.T
	lines []string
}

func (g *goldenLines) add(name string, b []byte) {
	g.lines = append(g.lines, name+" "+hex.EncodeToString(b))
}

// roundTrip checks that a richly filled value decodes back as itself, which
// proves the filler made a value every field of which travelled.
func (g *goldenLines) roundTrip(name string, want any, got any, err error) {
	g.t.Helper()
	if err != nil || !reflect.DeepEqual(got, want) {
		g.t.Errorf("%s: decoded %+v, %v; want %+v", name, got, err, want)
	}
}

func (g *goldenLines) check(file string) {
	g.t.Helper()
	path := filepath.Join("testdata", "golden", file)
	got := strings.Join(g.lines, "\n") + "\n"
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			g.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			g.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		g.t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if got == string(want) {
		return
	}
	wl := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	for i := range max(len(wl), len(g.lines)) {
		var w, l string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(g.lines) {
			l = g.lines[i]
		}
		if w != l {
			g.t.Errorf("%s line %d:\n got %s\nwant %s", file, i+1, l, w)
		}
	}
}

func TestGoldenCommands(t *testing.T) {
	g := &goldenLines{t: t}
	var rich [][]byte
	for _, op := range Ops() {
		zero, _ := NewCommand(op)
		name := strings.TrimPrefix(reflect.TypeOf(zero).String(), "*meta.")
		if b, ok := goldenEncodeCommand(zero); ok {
			g.add(name+"/zero", b)
			g.add(name+"/zero/fingerprint", fingerprintBytes(zero))
		}
		c, _ := NewCommand(op)
		(&filler{}).fill(reflect.ValueOf(c))
		b, ok := goldenEncodeCommand(c)
		if !ok {
			t.Fatalf("%s: the filled command does not encode and decode", name)
		}
		// A command embedding an entity carries its client fields only, so
		// the check is that what decoded encodes again to the same bytes.
		got, err := DecodeCommand(b)
		if again, ok := goldenEncodeCommand(got); err != nil || !ok || !bytes.Equal(again, b) {
			t.Errorf("%s: does not round-trip: %v", name, err)
		}
		g.add(name, b)
		g.add(name+"/fingerprint", fingerprintBytes(c))
		rich = append(rich, b)
	}
	g.add("entry", EncodeEntry(rich))
	g.check("commands.hex")
}

func fingerprintBytes(c Command) []byte { fp := Fingerprint(c); return fp[:] }

func TestGoldenQueries(t *testing.T) {
	g := &goldenLines{t: t}
	for _, k := range QueryKinds() {
		zero := queries[k]()
		name := strings.TrimPrefix(reflect.TypeOf(zero).String(), "*meta.")
		g.add(name+"/zero", EncodeQuery(zero))
		q := queries[k]()
		(&filler{}).fill(reflect.ValueOf(q))
		b := EncodeQuery(q)
		got, err := DecodeQuery(b)
		g.roundTrip(name, q, got, err)
		g.add(name, b)
	}
	g.check("queries.hex")
}

func TestGoldenAnswers(t *testing.T) {
	g := &goldenLines{t: t}
	tags := make([]int, 0, len(answerTags))
	for tag := range answerTags {
		tags = append(tags, int(tag))
	}
	slices.Sort(tags)
	b, err := EncodeAnswer(nil)
	if err != nil {
		t.Fatal(err)
	}
	g.add("nil", b)
	for _, tag := range tags {
		var typ reflect.Type
		for rt, c := range answerType {
			if int(c.tag) == tag {
				typ = rt
			}
		}
		name := strings.TrimPrefix(typ.String(), "*meta.")
		zero := reflect.New(typ.Elem()).Interface()
		b, err := EncodeAnswer(zero)
		if err != nil {
			t.Fatalf("%s/zero: %v", name, err)
		}
		g.add(name+"/zero", b)
		v := reflect.New(typ.Elem()).Interface()
		(&filler{}).fill(reflect.ValueOf(v))
		if b, err = EncodeAnswer(v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := DecodeAnswer(b)
		g.roundTrip(name, v, got, err)
		g.add(name, b)
	}
	g.check("answers.hex")
}

// goldenEntity encodes the zero and a filled value of one entity type and
// checks the filled one decodes back.
func goldenEntity[T any](g *goldenLines, name string, enc func(*T) []byte, dec func([]byte) (*T, error)) {
	g.t.Helper()
	g.add(name+"/zero", enc(new(T)))
	v := filled(new(T))
	b := enc(v)
	got, err := dec(b)
	g.roundTrip(name, v, got, err)
	g.add(name, b)
}

func TestGoldenEntities(t *testing.T) {
	g := &goldenLines{t: t}
	goldenEntity(g, "User", EncodeUser, DecodeUser)
	goldenEntity(g, "KV", EncodeKV, DecodeKV)
	goldenEntity(g, "Device", EncodeDevice, DecodeDevice)
	goldenEntity(g, "SystemUID", EncodeSystemUID, DecodeSystemUID)
	goldenEntity(g, "PluginBinding", EncodePluginBinding, DecodePluginBinding)
	goldenEntity(g, "Channel", EncodeChannel, DecodeChannel)
	goldenEntity(g, "ChannelMember", EncodeChannelMember, DecodeChannelMember)
	goldenEntity(g, "ListChange", EncodeListChange, DecodeListChange)
	goldenEntity(g, "Membership", EncodeMembership, DecodeMembership)
	goldenEntity(g, "CmdBinding", EncodeCmdBinding, DecodeCmdBinding)
	goldenEntity(g, "OutboxRecord", EncodeOutboxRecord, DecodeOutboxRecord)
	goldenEntity(g, "ChannelRuntime", EncodeChannelRuntime, DecodeChannelRuntime)
	goldenEntity(g, "ChannelTask", EncodeChannelTask, DecodeChannelTask)
	goldenEntity(g, "ChannelEvent", EncodeChannelEvent, DecodeChannelEvent)
	goldenEntity(g, "Change", EncodeChange, DecodeChange)
	goldenEntity(g, "WatchHead", EncodeWatchHead, DecodeWatchHead)

	w := *filled(&SeqWindow{})
	g.add("SeqWindow/zero", EncodeSeqWindow(SeqWindow{}))
	g.add("SeqWindow", EncodeSeqWindow(w))
	gw, err := DecodeSeqWindow(EncodeSeqWindow(w))
	g.roundTrip("SeqWindow", w, gw, err)

	r := *filled(&Result{})
	g.add("Result/zero", EncodeResult(&Result{}))
	g.add("Result", EncodeResult(&r))
	gr, err := DecodeResult(EncodeResult(&r))
	g.roundTrip("Result", r, gr, err)
	rs := []Result{r, {}, *filled(&Result{})}
	g.add("Results", EncodeResults(rs))
	grs, err := DecodeResults(EncodeResults(rs))
	if err != nil || len(grs) != 3 || !reflect.DeepEqual(grs[0], r) {
		t.Errorf("Results: %+v, %v", grs, err)
	}
	goldenEntity(g, "KVWriteResults", EncodeKVWriteResults, DecodeKVWriteResults)
	g.check("entities.hex")
}

// The golden files are read as text; a stray CRLF would fail every line.
func TestGoldenFilesAreLF(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.hex"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("\r")) {
			t.Errorf("%s has CR bytes", f)
		}
	}
}
