package meta

// Lists, and the pages of stored entities that list answers are made of.

// list codes a count, then each element with elem. Decoding refuses more
// than max elements, or more than bytes are left (every element takes one
// at least); an empty list decodes as nil.
func list[T any](c *coder, p *[]T, max int, what string, elem func(*coder, *T)) {
	n := uint64(len(*p))
	if n > uint64(max) {
		c.fail("%d %s (limit %d)", n, what, max)
	}
	c.uvarint(&n)
	if c.dec() {
		if c.err != nil {
			return
		}
		if n > uint64(max) || n > uint64(len(c.b)) {
			c.fail("%d %s (limit %d, %d bytes left)", n, what, max, len(c.b))
			return
		}
		*p = nil
		if n > 0 {
			*p = make([]T, n)
		}
	}
	for i := range *p {
		if c.dec() && c.err != nil {
			return
		}
		elem(c, &(*p)[i])
	}
}

// walk codes one element of a list that has a walk of its own.
func walk[T any, P interface {
	*T
	walker
}](c *coder, p *T) {
	P(p).code(c)
}

// stored codes *p as a stored entity, length-prefixed (nested); decoding
// allocates it.
func stored[T any, P interface {
	*T
	walker
}](c *coder, p *P) {
	if c.dec() {
		*p = new(T)
	}
	c.nested(*p, MaxEntryBytes, "entity")
}

// maxPageItems bounds a decoded page.
const maxPageItems = 100000

// page codes the items and More flag every list answer starts with.
func page[T any, P interface {
	*T
	walker
}](c *coder, items *[]P, more *bool) {
	list(c, items, maxPageItems, "page items", stored[T, P])
	c.bool(more)
}
