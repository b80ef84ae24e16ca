package meta

// Helpers shared by the list answers and scan queries of the device, system
// UID, plugin and channel-list families.

// encodeItems writes a count, then each item as a length-prefixed entity.
func encodeItems[T any](e *encoder, items []T, enc func(T) []byte) {
	e.uvarint(uint64(len(items)))
	for _, it := range items {
		e.bytes(enc(it))
	}
}

// decodeItems reads encodeItems's output, at most maxPageItems items.
func decodeItems[T any](d *decoder, dec func([]byte) (T, error)) []T {
	n := d.uvarint()
	if n > maxPageItems {
		d.fail("page of %d items", n)
	}
	out := make([]T, 0, min(n, uint64(len(d.b))))
	for i := uint64(0); i < n && d.err() == nil; i++ {
		raw := d.bytes(MaxEntryBytes)
		if d.err() != nil {
			break
		}
		it, err := dec(raw)
		if err != nil {
			d.fail("item %d: %v", i, err)
			break
		}
		out = append(out, it)
	}
	return out
}

// encodeLimit and decodeLimit carry a scan's page size.
func encodeLimit(e *encoder, limit int) { e.uvarint(uint64(max(limit, 0))) }

func decodeLimit(d *decoder) int {
	n := d.uvarint()
	if n > maxPageItems {
		d.fail("scan limit %d", n)
		return 0
	}
	return int(n)
}

// decodeVersion reads an entity's version byte and fails on an unknown one.
func decodeVersion(d *decoder, what string) {
	if v := d.u8(); v != entityVersion && d.err() == nil {
		d.fail("unknown %s version %d", what, v)
	}
}
