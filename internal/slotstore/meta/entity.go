package meta

// entityVersion is the version byte every encoded entity starts with.
const entityVersion = 1

// encodeEntity encodes a stored value. It cannot fail in practice: every
// field of a stored value came from a command, whose limits were checked
// when it was encoded (EncodeCommand), or is a counter, which has none; the
// decoders check them again.
func encodeEntity(w walker) []byte {
	c := encoding(64)
	w.code(&c)
	return c.b
}

// decodeEntity decodes a stored value. Bytes after the fields it knows
// (appended by a newer writer) are ignored.
func decodeEntity[T any, P interface {
	*T
	walker
}](b []byte) (P, error) {
	c := decoding(b)
	v := P(new(T))
	v.code(&c)
	if c.err != nil {
		return nil, c.err
	}
	return v, nil
}

// stamps codes the tail most entities end with.
func (c *coder) stamps(createdAtMs, updatedAtMs *int64, revision *uint64) {
	c.varint(createdAtMs)
	c.varint(updatedAtMs)
	c.uvarint(revision)
}

// User is an IM user account. Its route key is UID.
type User struct {
	UID         string
	Name        string
	Avatar      string
	Extra       string // opaque application data (JSON by convention), ≤ 64 KiB
	CreatedAtMs int64
	UpdatedAtMs int64
	Revision    uint64 // the group revision of the last change
}

func (u *User) code(c *coder) {
	c.version(entityVersion, "user")
	u.codeClient(c)
	c.stamps(&u.CreatedAtMs, &u.UpdatedAtMs, &u.Revision)
}

// EncodeUser encodes u as a stored value.
func EncodeUser(u *User) []byte { return encodeEntity(u) }

// DecodeUser decodes a stored user.
func DecodeUser(b []byte) (*User, error) { return decodeEntity[User](b) }

// KV is a business metadata key. Its route key is Key.
type KV struct {
	Key            string
	Value          []byte
	Revision       uint64 // group revision of the last change; the ETag
	CreateRevision uint64
	UpdatedAtMs    int64
}

func (kv *KV) code(c *coder) {
	c.version(entityVersion, "kv")
	c.str(&kv.Key, MaxKeyBytes, "key")
	c.bytes(&kv.Value, MaxValueBytes, "value")
	c.uvarint(&kv.Revision)
	c.uvarint(&kv.CreateRevision)
	c.varint(&kv.UpdatedAtMs)
}

// EncodeKV encodes kv as a stored value.
func EncodeKV(kv *KV) []byte { return encodeEntity(kv) }

// DecodeKV decodes a stored business key.
func DecodeKV(b []byte) (*KV, error) { return decodeEntity[KV](b) }
