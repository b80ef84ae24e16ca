package cluster

import "github.com/slotmeta/slotmeta/internal/slotstore/watch"

// Watches is what the node serves the change feed from (issue 27, package
// watch): the hub its replicas publish their committed changes to, and
// their change logs, read from the local replica that owns each slot, and
// the router's changes for the route stream.
func (n *Node) Watches() watch.Source {
	return watch.Source{Hub: n.hub, Log: n.replicas.ChangeLog(), RoutesChanged: n.router.Changed}
}
