package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/go-chi/chi/v5"
)

// exchange is one request and its answer, as sent and received.
type exchange struct {
	Method     string
	URL        *url.URL
	ReqHeader  http.Header
	ReqBody    []byte
	Status     int
	RespHeader http.Header
	RespBody   []byte
	// SpecRejects marks a request the walk sends to see the server refuse
	// it: the spec must refuse it too.
	SpecRejects bool
}

func (e exchange) String() string {
	return fmt.Sprintf("%s %s → %d", e.Method, e.URL.RequestURI(), e.Status)
}

// genericHeaders are response headers of HTTP itself, which the spec need
// not declare. Every other header a response carries must be declared on
// that response.
var genericHeaders = map[string]bool{
	"Accept-Ranges": true, "Allow": true, "Cache-Control": true, "Connection": true,
	"Content-Encoding": true, "Content-Length": true, "Content-Type": true, "Date": true,
	"Last-Modified": true, "Transfer-Encoding": true, "Vary": true, "X-Content-Type-Options": true,
}

// check validates e against the spec: the request against its operation
// (or, for SpecRejects, that the operation refuses it) and the answer
// against the operation's response for its status: status, body schema and
// content type, declared headers (required ones present, values of their
// schema), and no undeclared header or body.
func (s *spec) check(e exchange) error {
	ctx := context.Background()
	// The spec's conventions: HEAD is served wherever GET is, with GET's
	// answer less the body. So a HEAD is checked as its GET.
	method, head := e.Method, e.Method == http.MethodHead
	if head {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, e.URL.String(), bytes.NewReader(e.ReqBody))
	if err != nil {
		return err
	}
	req.Header = e.ReqHeader.Clone()
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("no operation of the spec: %w", err)
	}
	// The router hands path parameters over as sent, escaped; the spec's
	// schemas (patterns, lengths) are of their values.
	for name, v := range params {
		if u, err := url.PathUnescape(v); err == nil {
			params[name] = u
		}
	}
	reqIn := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{MultiError: true, SkipSettingDefaults: true, RejectWhenRequestBodyNotSpecified: true,
			AuthenticationFunc: s.authenticate},
	}
	var errs []error
	reqErr := openapi3filter.ValidateRequest(ctx, reqIn)
	switch {
	case e.SpecRejects && reqErr == nil:
		errs = append(errs, errors.New("the spec accepts this request, which the server refuses and the walk expects refused"))
	case !e.SpecRejects && reqErr != nil:
		errs = append(errs, fmt.Errorf("request: %w", reqErr))
	}
	respIn := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqIn,
		Status:                 e.Status,
		Header:                 e.RespHeader,
		Body:                   io.NopCloser(bytes.NewReader(e.RespBody)),
		// A stream's body is the events, which the spec describes in prose.
		Options: &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true,
			ExcludeResponseBody: head || e.RespHeader.Get("Content-Type") == "text/event-stream"},
	}
	if err := openapi3filter.ValidateResponse(ctx, respIn); err != nil {
		errs = append(errs, fmt.Errorf("response: %w", err))
	}
	if resp := route.Operation.Responses.Status(e.Status); resp != nil || route.Operation.Responses.Default() != nil {
		if resp == nil {
			resp = route.Operation.Responses.Default()
		}
		for _, name := range sortedKeys(e.RespHeader) {
			if !genericHeaders[name] && !hasHeaderFold(resp.Value.Headers, name) {
				errs = append(errs, fmt.Errorf("response header %s is not declared for %d", name, e.Status))
			}
		}
		if len(e.RespBody) > 0 && len(resp.Value.Content) == 0 {
			errs = append(errs, fmt.Errorf("response has a body but the spec declares none for %d", e.Status))
		}
	}
	return errors.Join(errs...)
}

// authenticate checks a request against one security scheme of its
// operation. The spec's only scheme is bearerAuth: a server with tokens
// (s.tokens) needs `Authorization: Bearer <token>`; a server without any
// needs nothing, as the scheme's description says. Whether the token is
// valid and its role high enough only the server knows (401, 403).
func (s *spec) authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	sc := in.SecurityScheme
	if in.SecuritySchemeName != "bearerAuth" || sc == nil || sc.Type != "http" || !strings.EqualFold(sc.Scheme, "bearer") {
		return fmt.Errorf("unknown security scheme %q", in.SecuritySchemeName)
	}
	if !s.tokens {
		return nil
	}
	scheme, tok, _ := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return errors.New("no bearer token in Authorization")
	}
	return nil
}

// hasHeaderFold reports whether declared has name in any letter case
// (http.Header holds "Etag" for the spec's "ETag").
func hasHeaderFold[V any](declared map[string]V, name string) bool {
	for k := range declared {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// specRejectsKey marks a request context: see exchange.SpecRejects.
type specRejectsKey struct{}

// refused marks ctx's request as one the server and the spec must refuse.
func refused(ctx context.Context) context.Context {
	return context.WithValue(ctx, specRejectsKey{}, true)
}

// validatingTransport checks every exchange that passes through it against
// the spec and reports a mismatch as a test error. It keeps the exchanges.
type validatingTransport struct {
	t    testing.TB
	spec *spec
	base http.RoundTripper

	mu        sync.Mutex
	exchanges []exchange
}

func (v *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		clone := req.Clone(req.Context())
		clone.Body = io.NopCloser(bytes.NewReader(body))
		req = clone
	}
	base := v.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	// A stream (GET /v1/watch) does not end: its status and headers are
	// checked, its body is the caller's to read.
	stream := resp.Header.Get("Content-Type") == "text/event-stream"
	var respBody []byte
	if !stream {
		respBody, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(respBody))
	}
	rejects, _ := req.Context().Value(specRejectsKey{}).(bool)
	e := exchange{
		Method: req.Method, URL: req.URL, ReqHeader: req.Header.Clone(), ReqBody: body,
		Status: resp.StatusCode, RespHeader: resp.Header.Clone(), RespBody: respBody,
		SpecRejects: rejects,
	}
	if err := v.spec.check(e); err != nil {
		v.t.Errorf("contract: %v:\n%v\nrequest body:  %.300s\nresponse body: %.500s", e, err, e.ReqBody, e.RespBody)
	}
	v.mu.Lock()
	v.exchanges = append(v.exchanges, e)
	v.mu.Unlock()
	return resp, nil
}

// seen returns the exchanges so far.
func (v *validatingTransport) seen() []exchange {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.exchanges)
}

// notAPI reports the served routes that are not operations of the API, so
// the spec does not list them: the console (its own HTML application) and
// the assets of the /docs page. GET /docs itself is in the spec.
func notAPI(route string) bool {
	return route == "/console" || strings.HasPrefix(route, "/console/") || route == "/docs/*"
}

// chiParam matches a chi parameter with a regexp, {id:[0-9]+}.
var chiParam = regexp.MustCompile(`\{([^}:]+):[^}]*\}`)

// servedRoutes lists "METHOD /path" for every route h serves (h must be a
// chi router, as httpapi.New returns), in the spec's path syntax.
func servedRoutes(h http.Handler) ([]string, error) {
	r, ok := h.(chi.Routes)
	if !ok {
		return nil, fmt.Errorf("%T is not a chi router", h)
	}
	var routes []string
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if notAPI(route) {
			return nil
		}
		if route != "/" {
			route = strings.TrimSuffix(route, "/") // a sub-router's "/" is its mount path
		}
		routes = append(routes, method+" "+chiParam.ReplaceAllString(route, "{$1}"))
		return nil
	})
	slices.Sort(routes)
	return slices.Compact(routes), err
}

// checkRoutes reports every route h serves that the spec lacks and every
// operation of the spec that h does not serve.
func (s *spec) checkRoutes(h http.Handler) error {
	served, err := servedRoutes(h)
	if err != nil {
		return err
	}
	ops := s.operations()
	var errs []error
	for _, r := range served {
		if !slices.Contains(ops, r) {
			errs = append(errs, fmt.Errorf("%s is served but not in the spec", r))
		}
	}
	for _, op := range ops {
		if !slices.Contains(served, op) {
			errs = append(errs, fmt.Errorf("%s is in the spec but not served", op))
		}
	}
	return errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
