package httpapi

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// What is stored can be read back: every JSON body is checked for values
// that the decoder would take but that break a reader later — encoding/json
// silently turns invalid UTF-8 and lone UTF-16 surrogates into U+FFFD (the
// write "succeeds" with other text than was sent), keeps a number such as
// 1e400 verbatim in a json.RawMessage (Go's own client then fails to decode
// the whole page that holds it), and accepts any nesting (a 1 000-deep
// value stops common parsers: Python's at its recursion limit, many at 512).

// MaxJSONDepth bounds the nesting of arrays and objects in a request body
// (the body itself is depth 1, so a stored value such as a user's extra may
// nest MaxJSONDepth-1 deep).
const MaxJSONDepth = 32

// checkJSONValues scans body — any bytes: syntax is the decoder's to judge,
// this only looks for what the decoder would let through — and refuses
// invalid UTF-8 anywhere, a \u escape of a lone surrogate, nesting deeper
// than MaxJSONDepth, a number that is not a finite float64, and an integer
// (no fraction, no exponent) outside int64. Offsets in the messages are
// bytes from the start of the body.
func checkJSONValues(body []byte) error {
	if !utf8.Valid(body) {
		return invalid("request body is not valid UTF-8 (at byte %d)", invalidUTF8At(body))
	}
	depth := 0
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			end, err := scanString(body, i)
			if err != nil {
				return err
			}
			i = end
		case c == '{' || c == '[':
			if depth++; depth > MaxJSONDepth {
				return invalid("request body nests deeper than %d arrays and objects (at byte %d)", MaxJSONDepth, i)
			}
		case c == '}' || c == ']':
			depth--
		case c == '-' || (c >= '0' && c <= '9'):
			end := i
			for end < len(body) && isNumberByte(body[end]) {
				end++
			}
			if err := checkNumber(body[i:end], i); err != nil {
				return err
			}
			i = end - 1
		}
	}
	return nil
}

// scanString checks the string starting at body[start] (its quote) for
// escapes of lone surrogates and returns the index of its closing quote
// (or the end of body).
func scanString(body []byte, start int) (int, error) {
	pendingHigh := -1 // offset of a high surrogate escape awaiting its low half
	for i := start + 1; i < len(body); i++ {
		switch body[i] {
		case '"':
			if pendingHigh >= 0 {
				return 0, loneSurrogate(pendingHigh)
			}
			return i, nil
		case '\\':
			if i+1 >= len(body) {
				return len(body), nil
			}
			if body[i+1] != 'u' {
				if pendingHigh >= 0 {
					return 0, loneSurrogate(pendingHigh)
				}
				i++ // the escaped byte
				continue
			}
			if i+5 >= len(body) {
				return len(body), nil // truncated: the decoder says so
			}
			v, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
			if err != nil {
				return len(body), nil // malformed: the decoder says so
			}
			switch {
			case v >= 0xD800 && v <= 0xDBFF:
				if pendingHigh >= 0 {
					return 0, loneSurrogate(pendingHigh)
				}
				pendingHigh = i
			case v >= 0xDC00 && v <= 0xDFFF:
				if pendingHigh < 0 {
					return 0, loneSurrogate(i)
				}
				pendingHigh = -1
			default:
				if pendingHigh >= 0 {
					return 0, loneSurrogate(pendingHigh)
				}
			}
			i += 5
		default:
			if pendingHigh >= 0 {
				return 0, loneSurrogate(pendingHigh)
			}
		}
	}
	return len(body), nil
}

func loneSurrogate(at int) error {
	return invalid("request body holds a \\u escape of a lone UTF-16 surrogate (at byte %d): it is no character and would be stored as U+FFFD", at)
}

func isNumberByte(c byte) bool {
	return c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || (c >= '0' && c <= '9')
}

// checkNumber refuses a number a reader cannot take: beyond float64, or an
// integer beyond int64.
func checkNumber(num []byte, at int) error {
	s := string(num)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return invalid("request body holds the number %.40s (at byte %d), beyond a 64-bit float", s, at)
		}
		return nil // malformed: the decoder says so
	}
	if math.IsInf(f, 0) {
		return invalid("request body holds the number %.40s (at byte %d), beyond a 64-bit float", s, at)
	}
	integer := true
	for _, c := range num {
		if c == '.' || c == 'e' || c == 'E' {
			integer = false
			break
		}
	}
	if integer {
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return invalid("request body holds the integer %.40s (at byte %d), beyond a 64-bit integer", s, at)
			}
		}
	}
	return nil
}

// invalidUTF8At is the offset of body's first byte that does not start a
// valid UTF-8 sequence.
func invalidUTF8At(body []byte) int {
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(body)
}
