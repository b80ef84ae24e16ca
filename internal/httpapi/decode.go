package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/go-playground/validator/v10"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// validate checks the `validate` tags of every request type. It is safe for
// concurrent use and caches struct metadata, so there is one per process.
var validate = newValidator()

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(jsonName)
	for tag, fn := range map[string]validator.Func{
		"uid":      func(fl validator.FieldLevel) bool { return uidProblem(fl.Field().String()) == "" },
		"routekey": func(fl validator.FieldLevel) bool { return keyProblem(fl.Field().String()) == "" },
		"maxbytes": func(fl validator.FieldLevel) bool {
			n, err := strconv.Atoi(fl.Param())
			return err == nil && fl.Field().Len() <= n
		},
	} {
		if err := v.RegisterValidation(tag, fn); err != nil {
			panic(err) // only a malformed tag name can fail
		}
	}
	return v
}

// jsonName is a struct field's JSON name ("" for a field JSON skips).
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

// fieldSets caches the JSON field names of each request type.
var fieldSets sync.Map // reflect.Type → map[string]bool

func fieldsOf(t reflect.Type) map[string]bool {
	if s, ok := fieldSets.Load(t); ok {
		return s.(map[string]bool)
	}
	s := map[string]bool{}
	for _, f := range reflect.VisibleFields(t) { // an embedded struct's fields are the request's
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			continue // encoding/json reads its fields in its stead
		}
		if name := jsonName(f); name != "" {
			s[name] = true
		}
	}
	fieldSets.Store(t, s)
	return s
}

// decode reads the request body into dst (a pointer to a request struct)
// and validates it. The body must be application/json, at most MaxBodyBytes,
// and exactly one JSON object whose member names are dst's JSON field names,
// exactly (not case-insensitively) and each at most once.
func (a *api) decode(w http.ResponseWriter, r *http.Request, dst any) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return invalidField("Content-Type", "must be application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(innermost(w), r.Body, a.maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return slotstore.Errorf(slotstore.CodePayloadTooLarge, "request body exceeds %d bytes", a.maxBody)
		}
		return invalid("reading request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return invalid("request body is empty; expected a JSON object")
	}
	if err := checkJSONValues(body); err != nil {
		return err
	}
	if err := checkMembers(body, fieldsOf(reflect.TypeOf(dst).Elem())); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(unembedded(err, reflect.TypeOf(dst)))
	}
	if err := validate.Struct(dst); err != nil {
		return validationError(err, reflect.TypeOf(dst))
	}
	return nil
}

// bodyless wraps the handler of a request that takes no body: a body
// with anything but whitespace or an empty JSON object is refused, not
// ignored (POST /v1/cluster/backups took {"destination": "…"} and
// started a backup to its own directory). At most a small prefix is read.
func bodyless(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		const most = 64
		body, err := io.ReadAll(io.LimitReader(r.Body, most+1))
		if err != nil {
			return invalid("reading request body: %v", err)
		}
		var obj map[string]json.RawMessage
		if b := bytes.TrimSpace(body); len(b) > 0 && (len(body) > most || json.Unmarshal(b, &obj) != nil || len(obj) > 0) {
			return invalid("%s %s takes no request body (send none, or {})", r.Method, r.URL.Path)
		}
		return h(w, r)
	}
}

// innermost unwraps middleware's response writers down to the server's own,
// which MaxBytesReader tells to close the connection after an oversize body.
func innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// maxDetails bounds the member names one answer complains about.
const maxDetails = 20

// checkMembers checks that body is one well-formed JSON object, nothing
// after it, whose member names are all in allowed and unique.
func checkMembers(body []byte, allowed map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return jsonError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return invalid("request body must be a JSON object")
	}
	var bad []slotstore.FieldError
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonError(err)
		}
		name, _ := tok.(string)
		switch {
		case len(bad) == maxDetails:
		case !allowed[name]:
			bad = append(bad, slotstore.FieldError{Field: name, Reason: "unknown field"})
		case seen[name]:
			bad = append(bad, slotstore.FieldError{Field: name, Reason: "duplicate field"})
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return jsonError(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("request body must hold exactly one JSON value")
	}
	if len(bad) > 0 {
		return fieldErrors(bad...)
	}
	return nil
}

// unembedded names a mistyped member as the client wrote it (see
// withoutEmbedded).
func unembedded(err error, t reflect.Type) error {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
		te.Field = withoutEmbedded(t, te.Field)
	}
	return err
}

// withoutEmbedded is path, a member's path in a request of type t, as the
// client wrote it: encoding/json and the validator put the Go name of the
// embedded struct that holds the member before it
// ("channelFlagsJSON.extra"), a name the client never saw.
func withoutEmbedded(t reflect.Type, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return path
	}
	segs := strings.Split(path, ".")
	kept := segs[:0]
	for _, seg := range segs {
		if f, ok := t.FieldByName(seg); !ok || !f.Anonymous {
			kept = append(kept, seg)
		}
	}
	return strings.Join(kept, ".")
}

// jsonError explains a decoding failure.
func jsonError(err error) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return invalid("malformed JSON at byte %d: %v", se.Offset, se)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return invalid("request body must be a JSON object, not %s", article(te.Value))
		}
		if lo, hi, ok := intRange(te.Type); ok && strings.HasPrefix(te.Value, "number") {
			// "number 4294967296" for a uint32, "number 1.5" for any integer.
			return invalidField(te.Field, fmt.Sprintf("must be an integer from %s to %s, not %s", lo, hi, strings.TrimPrefix(te.Value, "number ")))
		}
		return invalidField(te.Field, fmt.Sprintf("must be %s, not %s", jsonType(te.Type), article(te.Value)))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return invalid("malformed JSON: unexpected end of input")
	}
	return invalid("malformed JSON: %v", err)
}

// intRange is the range of an integer type, in decimal.
func intRange(t reflect.Type) (lo, hi string, ok bool) {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return strconv.FormatInt(-1<<(bits-1), 10), strconv.FormatInt(1<<(bits-1)-1, 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "0", strconv.FormatUint(1<<t.Bits()-1, 10), true
	}
	return "", "", false
}

// jsonType names the JSON type a Go type is decoded from.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

func article(jsonKind string) string {
	switch jsonKind {
	case "array", "object":
		return "an " + jsonKind
	case "":
		return "this value"
	}
	return "a " + jsonKind
}

// validationError lists the fields validator rejected under their JSON names.
func validationError(err error, t reflect.Type) error {
	ves, ok := errors.AsType[validator.ValidationErrors](err)
	if !ok {
		return invalid("invalid request: %v", err)
	}
	details := make([]slotstore.FieldError, 0, len(ves))
	for _, fe := range ves {
		field := fe.Namespace()
		if _, rest, ok := strings.Cut(field, "."); ok {
			field = rest // drop the request type's name
		}
		details = append(details, slotstore.FieldError{Field: withoutEmbedded(t, field), Reason: reason(fe)})
	}
	return fieldErrors(details...)
}

// reason says in words why fe's field was rejected.
func reason(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "is required and must not be empty"
	case "uid":
		return uidProblem(fmt.Sprint(fe.Value()))
	case "routekey":
		return keyProblem(fmt.Sprint(fe.Value()))
	case "maxbytes":
		return "must be at most " + fe.Param() + " bytes"
	case "min":
		if fe.Kind() == reflect.Slice {
			return "must hold at least " + fe.Param() + " items"
		}
		return "must be at least " + fe.Param()
	case "max":
		if fe.Kind() == reflect.Slice {
			return "must hold at most " + fe.Param() + " items"
		}
		return "must be at most " + fe.Param()
	}
	return "fails the " + fe.Tag() + " check"
}
