// Command etcd is etcd's own server, v3.6.16, built from its module for
// bench/compare-etcd.sh: etcd 3.6 is not packaged for this machine, and
// `go install` refuses the server module (its go.mod has replace
// directives), so this wrapper module requires it and calls its main.
// A module of its own, so that etcd's dependencies stay out of slotmeta's.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
