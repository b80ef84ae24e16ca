// Package web holds the console's static assets, embedded in the binary.
package web

import "embed"

// Static is the static/ tree (served under /console/static/).
//
//go:embed static
var Static embed.FS
