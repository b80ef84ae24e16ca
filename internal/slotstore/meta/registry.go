package meta

import (
	"fmt"
	"maps"
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

// answerCodec walks answers of one type: it encodes v, or, decoding (v is
// nil), returns the answer it decoded.
type answerCodec struct {
	tag  uint8
	code func(c *coder, v any) any
}

// registerCommand makes the op of command type T decodable. It panics on a
// repeated op (a programming error caught at start).
func registerCommand[T any, P interface {
	*T
	Command
}]() {
	register(commands, P(new(T)).Op(), func() Command { return P(new(T)) })
}

// registerQuery makes the kind of query type T decodable.
func registerQuery[T any, P interface {
	*T
	Query
}]() {
	register(queries, P(new(T)).Kind(), func() Query { return P(new(T)) })
}

func register[K ~uint8, V any](m map[K]func() V, k K, f func() V) {
	if _, dup := m[k]; dup || k == 0 {
		panic(fmt.Sprintf("meta: %T %d registered twice or zero", k, k))
	}
	m[k] = f
}

// registerAnswer makes answers of type P travel between nodes under tag,
// walked by code. A nil P travels as "no answer".
func registerAnswer[P any](tag uint8, code func(c *coder, v any) any) {
	t := reflect.TypeFor[P]()
	if _, dup := answerTags[tag]; dup || tag == answerNil {
		panic(fmt.Sprintf("meta: answer tag %d registered twice or zero", tag))
	}
	if _, dup := answerType[t]; dup {
		panic(fmt.Sprintf("meta: answer type %v registered twice", t))
	}
	c := answerCodec{tag: tag, code: code}
	answerTags[tag], answerType[t] = c, c
}

// registerEntityAnswer makes a stored entity an answer: it travels as its
// stored value, length-prefixed, so fields a newer node appended are skipped.
func registerEntityAnswer[T any, P interface {
	*T
	walker
}](tag uint8) {
	registerAnswer[P](tag, func(c *coder, v any) any {
		p, _ := v.(P)
		stored(c, &p)
		return p
	})
}

// registerPageAnswer makes a list answer travel, walked in place.
func registerPageAnswer[T any, P interface {
	*T
	walker
}](tag uint8) {
	registerAnswer[P](tag, func(c *coder, v any) any {
		p, _ := v.(P)
		if p == nil {
			p = new(T)
		}
		p.code(c)
		return p
	})
}

// registerAnswers registers an entity and its page as answers.
func registerAnswers[E, Page any, PE interface {
	*E
	walker
}, PPage interface {
	*Page
	walker
}](entityTag, pageTag uint8) {
	registerEntityAnswer[E, PE](entityTag)
	registerPageAnswer[Page, PPage](pageTag)
}

// EncodeAnswer encodes a query's answer (a registered type, or nil). It
// fails on an unregistered type, and on a field over a codec limit (a page
// longer than a node decodes, say).
func EncodeAnswer(v any) ([]byte, error) {
	c := encoding(64)
	c.b = append(c.b, wireVersion)
	if v == nil {
		return append(c.b, answerNil), nil
	}
	ac, ok := answerType[reflect.TypeOf(v)]
	if !ok {
		return nil, fmt.Errorf("meta: cannot encode answer %T", v)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return append(c.b, answerNil), nil
	}
	c.b = append(c.b, ac.tag)
	ac.code(&c, v)
	if c.err != nil {
		return nil, fmt.Errorf("answer %T: %w", v, c.err)
	}
	return c.b, nil
}

// DecodeAnswer decodes EncodeAnswer's output.
func DecodeAnswer(b []byte) (any, error) {
	return decodeFrame(b, wireVersion, "answer", func(tag uint8, c *coder) (any, bool) {
		if tag == answerNil {
			return nil, true
		}
		ac, ok := answerTags[tag]
		if !ok {
			return nil, false
		}
		return ac.code(c, nil), true
	})
}

// Ops lists every registered command op, in order (for completeness checks:
// every op needs an applier in package fsm).
func Ops() []Op { return slices.Sorted(maps.Keys(commands)) }

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
func QueryKinds() []QueryKind { return slices.Sorted(maps.Keys(queries)) }
