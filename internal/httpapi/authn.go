package httpapi

import (
	"net/http"

	"slotmeta/internal/auth"
	"slotmeta/internal/slotstore"
)

// authenticate refuses a request whose bearer token is missing or wrong
// (401, with WWW-Authenticate) or whose role is too low (403), before any
// body is read.
func (a *api) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.auth.Require(r, auth.RequiredRole(r)); err != nil {
			if slotstore.ErrorCode(err) == slotstore.CodeUnauthenticated {
				w.Header().Set("WWW-Authenticate", `Bearer realm="slotmeta"`)
			}
			a.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
