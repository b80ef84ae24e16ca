// Package client is the Go client of the slotmeta HTTP API, generated from
// openapi.yaml by oapi-codegen (see oapi-codegen.yaml). Do not edit
// client.gen.go: change openapi.yaml and run `make generate`.
package client

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../openapi.yaml
