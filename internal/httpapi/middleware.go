package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// recoverPanics answers a panicking handler with the error body (500
// internal) and logs the panic with its stack. http.ErrAbortHandler is
// passed on: it is how a handler deliberately aborts a response.
func (a *api) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			a.log.Error("httpapi: handler panicked", "method", r.Method, "path", r.URL.Path,
				"panic", rec, "stack", string(debug.Stack()))
			if ww, ok := w.(middleware.WrapResponseWriter); ok && ww.Status() != 0 {
				return // the status is sent; the client sees a truncated body
			}
			a.writeError(w, r, &slotstore.Error{Code: slotstore.CodeInternal, Message: "internal error"})
		}()
		next.ServeHTTP(w, r)
	})
}

// withDeadline gives every request's context a deadline but a watch
// stream's, which lasts as long as its client.
func withDeadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == watchPath || r.URL.Path == streamPath || r.URL.Path == consoleStreamPath {
				next.ServeHTTP(w, r) // a stream: it ends when the client or the node goes (watch.go)
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// routeOnEscapedPath makes chi match on the escaped path. By itself chi
// matches on URL.RawPath when net/url kept one and on the decoded URL.Path
// otherwise, so a parameter would arrive escaped or not depending on the
// request; on the escaped path it is always escaped once, pathParam
// unescapes it, and a %2F stays inside its segment.
func routeOnEscapedPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.RoutePath == "" {
			rctx.RoutePath = r.URL.EscapedPath()
		}
		next.ServeHTTP(w, r)
	})
}

// notFound answers a path no route matches.
func (a *api) notFound(w http.ResponseWriter, r *http.Request) {
	a.writeError(w, r, slotstore.Errorf(slotstore.CodeNotFound, "no route for %s", r.URL.EscapedPath()))
}

// allowMethods are the methods an Allow header may list.
var allowMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// flatRoutes copies the routes of r into one router without sub-routers, to
// answer "which methods does this path take?": chi's Match is not exact at
// the path a sub-router is mounted on. A route of a sub-router's "/" is also
// reachable without the trailing slash.
func flatRoutes(r chi.Routes) (chi.Routes, error) {
	flat := chi.NewRouter()
	noop := func(http.ResponseWriter, *http.Request) {}
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		flat.MethodFunc(method, route, noop)
		if trimmed := strings.TrimSuffix(route, "/"); trimmed != route && trimmed != "" {
			flat.MethodFunc(method, trimmed, noop)
		}
		return nil
	})
	return flat, err
}

// methodNotAllowed answers 405 with an Allow header, which *routes (set once
// New has registered every route) computes; a path that takes no method at
// all is 404. A 405 has no error code of its own: the body says
// invalid_argument.
func (a *api) methodNotAllowed(routes *chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.EscapedPath()
		var allowed []string
		for _, m := range allowMethods {
			probe := m
			if m == http.MethodHead {
				probe = http.MethodGet // middleware.GetHead serves HEAD wherever GET is
			}
			if (*routes).Match(chi.NewRouteContext(), probe, path) {
				allowed = append(allowed, m)
			}
		}
		if len(allowed) == 0 { // an unknown method on a path that does not exist
			a.notFound(w, r)
			return
		}
		list := strings.Join(allowed, ", ")
		w.Header().Set("Allow", list)
		a.writeErrorStatus(w, r, http.StatusMethodNotAllowed, slotstore.Errorf(slotstore.CodeInvalidArgument,
			"method %s is not allowed on %s (allowed: %s)", r.Method, path, list))
	}
}

// validText refuses a request whose query is not valid UTF-8 once
// unescaped (a %FF, or the encoding of a lone surrogate): parameters are
// text, and one replaced by U+FFFD would be another than was asked for.
// (Path parameters are checked by their handlers, which name the field.)
func (a *api) validText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Fast path, one pass: no query, or all of it, unescaped, is UTF-8
		// (separators such as ';' are the handlers' to read, as before).
		if r.URL.RawQuery == "" {
			next.ServeHTTP(w, r)
			return
		}
		if u, err := url.QueryUnescape(r.URL.RawQuery); err == nil && utf8.ValidString(u) {
			next.ServeHTTP(w, r)
			return
		}
		// Slow path: name the parameter (or the malformed query).
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			a.writeError(w, r, invalid("malformed query string: %v", err))
			return
		}
		for k, vs := range q {
			if !utf8.ValidString(k) {
				a.writeError(w, r, invalid("a query parameter's name is not valid UTF-8 once unescaped"))
				return
			}
			for _, v := range vs {
				if !utf8.ValidString(v) {
					a.writeError(w, r, invalidField(k, "is not valid UTF-8 once unescaped"))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
