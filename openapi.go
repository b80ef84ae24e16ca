// Package slotmeta embeds the API contract, openapi.yaml, so the server can
// serve it and tests can hold the router and responses to it.
package slotmeta

import _ "embed"

// OpenAPI is the contents of openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
