package console

import (
	"io/fs"
	"net/http"

	"github.com/slotmeta/slotmeta/web"
)

// docsPage is the /docs page: Swagger UI rendering the contract the node
// serves at /openapi.yaml. Everything it loads comes from this node.
const docsPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>slotmeta API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="swagger-ui" data-testid="swagger-ui"></div>
<noscript>The rendered API needs JavaScript; the contract itself is at <a href="/openapi.yaml">/openapi.yaml</a>.</noscript>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/docs.js"></script>
</body></html>
`

// docsScript starts Swagger UI. validatorUrl: null keeps it from sending the
// contract to the public validator service.
const docsScript = `window.ui = SwaggerUIBundle({
  url: "/openapi.yaml",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  supportedSubmitMethods: ["get", "head"]
});
`

// docsAssets are the files of web/static/swagger that the page loads:
// swagger-ui-dist 5.35.0, vendored by `make update-swagger-ui`.
var docsAssets = map[string]bool{"swagger-ui-bundle.js": true, "swagger-ui.css": true}

// Docs serves a human-readable rendering of the API contract: GET /docs is
// the page and GET /docs/<asset> its scripts and style. It expects the
// contract at /openapi.yaml and sees the full request path.
//
// "Try it out" is offered for GET and HEAD only, so browsing the docs
// cannot write anything.
func Docs() http.Handler {
	static, err := fs.Sub(web.Static, "static/swagger")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	files := http.StripPrefix("/docs/", http.FileServerFS(static))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch name := r.URL.Path; {
		case name == "/docs" || name == "/docs/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write([]byte(docsPage))
		case name == "/docs/docs.js":
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write([]byte(docsScript))
		case len(name) > len("/docs/") && docsAssets[name[len("/docs/"):]]:
			w.Header().Set("Cache-Control", "public, max-age=3600")
			files.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}
