package httpapi

import (
	"encoding/json"
	"net/http"
)

// handlerFunc is a handler that returns its failure instead of rendering it.
// It writes its own success response; the error, if any, is rendered by
// handle. A handlerFunc that returns an error must not have written the body.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts a handlerFunc to http.HandlerFunc, rendering its error.
func (a *api) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			a.writeError(w, r, err)
		}
	}
}

// internalBody is answered when a response cannot be encoded, which only a
// bug can cause.
const internalBody = `{"error":{"code":"internal","message":"internal error: response encoding failed","retryable":false}}` + "\n"

// writeJSON writes v as the JSON body of a status response.
func (a *api) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		a.log.Error("httpapi: encoding response", "method", r.Method, "path", r.URL.Path, "err", err)
		b, status = []byte(internalBody), http.StatusInternalServerError
	} else {
		b = append(b, '\n')
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
