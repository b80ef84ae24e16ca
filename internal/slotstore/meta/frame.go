package meta

import "fmt"

// Commands, queries and answers travel framed: a version byte, a kind byte
// (op, query kind, answer tag), then the body its walk codes. The frame is
// the whole message, so bytes after the body are an error — unlike a stored
// entity, whose trailing bytes are fields a newer writer appended.

// decodeFrame decodes version | kind | body, the frame of a command, query
// or answer: walk decodes the body of kind (false: kind is unknown). The
// frame is the whole message, so trailing bytes are an error.
func decodeFrame[V any](b []byte, version uint8, what string, walk func(kind uint8, c *coder) (V, bool)) (V, error) {
	var zero V
	if len(b) > 0 && b[0] != version {
		return zero, fmt.Errorf("%w: unknown %s version %d", ErrMalformed, what, b[0])
	}
	if len(b) < 2 {
		return zero, fmt.Errorf("%w: %d bytes, no %s kind", ErrMalformed, len(b), what)
	}
	c := decoding(b[2:])
	c.off = 2
	v, ok := walk(b[1], &c)
	if !ok {
		return zero, fmt.Errorf("%w: unknown %s kind %d", ErrMalformed, what, b[1])
	}
	if c.err != nil {
		return zero, c.err
	}
	if len(c.b) != 0 {
		return zero, fmt.Errorf("%w: %d trailing bytes after %s", ErrMalformed, len(c.b), what)
	}
	return v, nil
}

// decodeRegistered decodes the frame of a registered type (a command, a
// query): registry makes an empty value of the kind, walk fills it.
func decodeRegistered[K ~uint8, V any](b []byte, version uint8, what string, registry map[K]func() V, walk func(*coder, V)) (V, error) {
	return decodeFrame(b, version, what, func(kind uint8, c *coder) (v V, ok bool) {
		f := registry[K(kind)]
		if f != nil {
			v = f()
			walk(c, v)
		}
		return v, f != nil
	})
}
