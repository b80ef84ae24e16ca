package meta

import (
	"fmt"
	"reflect"
	"slices"
)

// Registries of the wire types. Each resource family registers its commands,
// queries and answer types from an init function in its own file, so adding a
// family touches no shared switch. Numbers are never reused; each family owns
// a range:
//
//	Op (commands)         QueryKind (queries)     answer tags
//	  1–9   users, kv       1–9   users, kv         1–9   users, kv
//	 10–19  devices, system uids, plugins 10–19      10–19
//	 20–39  channels, lists  20–39                   20–39
//	 40–59  memberships, cmd bindings, outbox 40–59  40–59
//	 60–79  runtime meta, channel migration tasks    60–79
//	 80–99  message events   80–99                   80–99
//	100–127 cluster-internal (ownership, slot migration) 100–127
var (
	commands   = map[Op]func() Command{}
	queries    = map[QueryKind]func() Query{}
	answerTags = map[uint8]answerCodec{}
	answerType = map[reflect.Type]answerCodec{}
)

type answerCodec struct {
	tag uint8
	enc func(*encoder, any)
	dec func(*decoder) (any, error)
}

// registerCommand makes op decodable; f returns an empty command of op. It
// panics on a repeated op (a programming error caught at start).
func registerCommand(op Op, f func() Command) {
	if _, dup := commands[op]; dup || op == 0 {
		panic(fmt.Sprintf("meta: op %d registered twice or zero", op))
	}
	if got := f().Op(); got != op {
		panic(fmt.Sprintf("meta: op %d registered for a command of op %d", op, got))
	}
	commands[op] = f
}

// registerQuery makes query kind k decodable.
func registerQuery(k QueryKind, f func() Query) {
	if _, dup := queries[k]; dup || k == 0 {
		panic(fmt.Sprintf("meta: query kind %d registered twice or zero", k))
	}
	if got := f().Kind(); got != k {
		panic(fmt.Sprintf("meta: query kind %d registered for a query of kind %d", k, got))
	}
	queries[k] = f
}

// registerAnswer makes answers of sample's (pointer) type travel between
// nodes under tag. A nil pointer of that type travels as "no answer".
func registerAnswer(tag uint8, sample any, enc func(*encoder, any), dec func(*decoder) (any, error)) {
	t := reflect.TypeOf(sample)
	if _, dup := answerTags[tag]; dup || tag == answerNil {
		panic(fmt.Sprintf("meta: answer tag %d registered twice or zero", tag))
	}
	if _, dup := answerType[t]; dup {
		panic(fmt.Sprintf("meta: answer type %v registered twice", t))
	}
	c := answerCodec{tag: tag, enc: enc, dec: dec}
	answerTags[tag], answerType[t] = c, c
}

// EncodeAnswer encodes a query's answer (a registered type, or nil).
func EncodeAnswer(v any) ([]byte, error) {
	e := encoder{b: make([]byte, 0, 64)}
	e.u8(wireVersion)
	if v == nil {
		e.u8(answerNil)
		return e.b, nil
	}
	c, ok := answerType[reflect.TypeOf(v)]
	if !ok {
		return nil, fmt.Errorf("meta: cannot encode answer %T", v)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		e.u8(answerNil)
		return e.b, nil
	}
	e.u8(c.tag)
	c.enc(&e, v)
	return e.b, nil
}

// DecodeAnswer decodes EncodeAnswer's output.
func DecodeAnswer(b []byte) (any, error) {
	d := decoder{b: b}
	if v := d.u8(); d.err() == nil && v != wireVersion {
		return nil, fmt.Errorf("%w: unknown answer version %d", ErrMalformed, v)
	}
	tag := d.u8()
	if d.err() != nil {
		return nil, d.err()
	}
	var out any
	if tag != answerNil {
		c, ok := answerTags[tag]
		if !ok {
			return nil, fmt.Errorf("%w: unknown answer tag %d", ErrMalformed, tag)
		}
		v, err := c.dec(&d)
		if err != nil {
			return nil, err
		}
		out = v
	}
	if d.err() != nil {
		return nil, d.err()
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after answer", ErrMalformed, len(d.b))
	}
	return out, nil
}

// Ops lists every registered command op, in order (for completeness checks:
// every op needs an applier in package fsm).
func Ops() []Op {
	out := make([]Op, 0, len(commands))
	for op := range commands {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}

// NewCommand returns an empty command of op (false: op is unknown).
func NewCommand(op Op) (Command, bool) {
	f, ok := commands[op]
	if !ok {
		return nil, false
	}
	return f(), true
}

// QueryKinds lists every registered query kind, in order (every kind needs
// a lookup in package fsm).
func QueryKinds() []QueryKind {
	out := make([]QueryKind, 0, len(queries))
	for k := range queries {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
