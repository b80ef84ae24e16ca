package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Limits of the API beyond the codec's. The byte limits of request bodies
// are in their validate tags (maxbytes=N); limits_test holds those to meta's.
const (
	maxUIDBytes     = 128
	maxKeyBytes     = meta.MaxKeyBytes
	defaultPageSize = 100
	maxPageSize     = 1000
)

// uidProblem says what is wrong with uid as a user id, or "" if nothing:
// 1–128 bytes of UTF-8 without control characters, whitespace or '/', and
// not "." or ".." (a uid is a path segment).
func uidProblem(uid string) string {
	return segmentProblem(uid, maxUIDBytes, "control characters, whitespace or '/'",
		func(c rune) bool { return unicode.IsControl(c) || unicode.IsSpace(c) || c == '/' })
}

// keyProblem says what is wrong with key as a business key (or route key),
// or "" if nothing: 1–512 bytes of UTF-8 without control characters, and
// not "." or "..".
func keyProblem(key string) string {
	return segmentProblem(key, maxKeyBytes, "control characters", unicode.IsControl)
}

// segmentProblem says what is wrong with s as a name that may stand as a
// path segment, or "" if nothing: 1 to max bytes of UTF-8, not "." or "..",
// and no rune that bad refuses (the runes it names).
func segmentProblem(s string, max int, names string, bad func(rune) bool) string {
	if len(s) == 0 || len(s) > max {
		return fmt.Sprintf("must be 1 to %d bytes", max)
	}
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if s == "." || s == ".." {
		return `must not be "." or ".."`
	}
	for _, c := range s {
		if bad(c) {
			return "must not contain " + names
		}
	}
	return ""
}

// pathParam returns the URL parameter name, unescaped. The router matches on
// the escaped path (routeOnEscapedPath), so every parameter arrives escaped
// exactly once and a %2F stays inside its segment.
func pathParam(r *http.Request, name string, problem func(string) string) (string, error) {
	v, err := url.PathUnescape(chi.URLParam(r, name))
	if err != nil {
		return "", invalidField(name, "is not a valid URL-escaped path segment")
	}
	if p := problem(v); p != "" {
		return "", invalidField(name, p)
	}
	return v, nil
}

// queryParams parses the query string, rejecting a malformed one.
func queryParams(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalid("malformed query string: %v", err)
	}
	return q, nil
}

// single returns the one value of a query parameter; ok is false if absent.
func single(q url.Values, name string) (v string, ok bool, err error) {
	vs := q[name]
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
		return vs[0], true, nil
	}
	return "", false, invalidField(name, "must be given at most once")
}

// consistencyParam parses ?consistency=linearizable|local (default linearizable).
func consistencyParam(q url.Values) (meta.Consistency, error) {
	v, ok, err := single(q, "consistency")
	if err != nil || !ok {
		return meta.Linearizable, err
	}
	switch v {
	case "linearizable":
		return meta.Linearizable, nil
	case "local":
		return meta.Local, nil
	}
	return 0, invalidField("consistency", `must be "linearizable" or "local"`)
}

// boolParam parses ?name=true|false (strconv.ParseBool's spellings;
// default false).
func boolParam(q url.Values, name string) (bool, error) {
	v, ok, err := single(q, name)
	if err != nil || !ok {
		return false, err
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalidField(name, "must be true or false")
	}
	return b, nil
}

// limitParam parses ?limit= (1–maxPageSize, default defaultPageSize).
func limitParam(q url.Values) (int, error) {
	v, ok, err := single(q, "limit")
	if err != nil || !ok {
		return defaultPageSize, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPageSize {
		return 0, invalidField("limit", fmt.Sprintf("must be an integer from 1 to %d", maxPageSize))
	}
	return n, nil
}

// headerValue returns the one value of header name; ok is false if absent.
// Repeating a header, or listing values in it, is an error.
func headerValue(r *http.Request, name string) (v string, ok bool, err error) {
	vs := r.Header.Values(name)
	switch {
	case len(vs) == 0:
		return "", false, nil
	case len(vs) > 1 || strings.Contains(vs[0], ","):
		return "", false, invalidField(name, "must hold exactly one value")
	}
	return vs[0], true, nil
}

// idempotencyKey returns the Idempotency-Key header: 1–256 bytes of
// printable ASCII, or "" if absent.
func idempotencyKey(r *http.Request) (string, error) {
	vs := r.Header.Values("Idempotency-Key")
	if len(vs) == 0 {
		return "", nil
	}
	if len(vs) > 1 {
		return "", invalidField("Idempotency-Key", "must be given at most once")
	}
	v := vs[0]
	if len(v) == 0 || len(v) > meta.MaxIdempotencyKeyBytes {
		return "", invalidField("Idempotency-Key", fmt.Sprintf("must be 1 to %d bytes", meta.MaxIdempotencyKeyBytes))
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", invalidField("Idempotency-Key", "must be printable ASCII")
		}
	}
	return v, nil
}

// fence is the client's X-Route-Revision, if it sent one.
type fence struct {
	revision uint64
	set      bool
}

// routeFence parses the X-Route-Revision request header.
func routeFence(r *http.Request) (fence, error) {
	v, ok, err := headerValue(r, hdrRouteRevision)
	if err != nil || !ok {
		return fence{}, err
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return fence{}, invalidField(hdrRouteRevision, "must be a decimal route revision")
	}
	return fence{revision: n, set: true}, nil
}

// writeHeaders parses what every write takes from its headers.
func writeHeaders(r *http.Request) (idemKey string, f fence, err error) {
	if idemKey, err = idempotencyKey(r); err != nil {
		return "", fence{}, err
	}
	f, err = routeFence(r)
	return idemKey, f, err
}

// readParams parses what every keyed read takes: ?consistency= and the fence.
func readParams(r *http.Request) (meta.Consistency, fence, error) {
	q, err := queryParams(r)
	if err != nil {
		return 0, fence{}, err
	}
	c, err := consistencyParam(q)
	if err != nil {
		return 0, fence{}, err
	}
	f, err := routeFence(r)
	return c, f, err
}

// kvCond turns If-Match / If-None-Match into a write precondition:
// If-Match: "<revision>" compares the revision, If-Match: * requires the key
// to exist, If-None-Match: * (only where allowAbsent) requires it to be absent.
func kvCond(r *http.Request, allowAbsent bool) (meta.Cond, error) {
	im, hasIM, err := headerValue(r, "If-Match")
	if err != nil {
		return meta.Cond{}, err
	}
	inm, hasINM, err := headerValue(r, "If-None-Match")
	if err != nil {
		return meta.Cond{}, err
	}
	switch {
	case hasIM && hasINM:
		return meta.Cond{}, invalid("If-Match and If-None-Match cannot be combined")
	case hasINM:
		if !allowAbsent {
			return meta.Cond{}, invalidField("If-None-Match", "is not supported on this method")
		}
		if inm != "*" {
			return meta.Cond{}, invalidField("If-None-Match", `only "*" is supported`)
		}
		return meta.Cond{Kind: meta.CondIfAbsent}, nil
	case hasIM:
		if im == "*" {
			return meta.Cond{Kind: meta.CondIfExists}, nil
		}
		rev, ok := parseETag(im)
		if !ok {
			return meta.Cond{}, invalidField("If-Match", `must be "*" or one strong entity tag "<revision>" with a positive revision`)
		}
		return meta.Cond{Kind: meta.CondIfRevision, Revision: rev}, nil
	}
	return meta.Cond{}, nil
}

// etag renders a revision as a strong entity tag.
func etag(rev uint64) string { return `"` + strconv.FormatUint(rev, 10) + `"` }

// parseETag parses etag's output; weak tags and revision 0 are refused.
func parseETag(s string) (uint64, bool) {
	if len(s) < 3 || s[0] != '"' || s[len(s)-1] != '"' {
		return 0, false
	}
	rev, err := strconv.ParseUint(s[1:len(s)-1], 10, 64)
	return rev, err == nil && rev > 0
}
