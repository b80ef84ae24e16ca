package meta

// entityVersion is the version byte every encoded entity starts with.
const entityVersion = 1

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

// EncodeUser encodes u as a stored value.
func EncodeUser(u *User) []byte {
	e := encoder{b: make([]byte, 0, 32+len(u.UID)+len(u.Name)+len(u.Avatar)+len(u.Extra))}
	e.u8(entityVersion)
	e.str(u.UID)
	e.str(u.Name)
	e.str(u.Avatar)
	e.str(u.Extra)
	e.varint(u.CreatedAtMs)
	e.varint(u.UpdatedAtMs)
	e.uvarint(u.Revision)
	return e.b
}

// DecodeUser decodes a stored user.
func DecodeUser(b []byte) (*User, error) {
	d := decoder{b: b}
	if v := d.u8(); v != entityVersion && d.err() == nil {
		d.fail("unknown user version %d", v)
	}
	u := &User{
		UID:    d.str(MaxKeyBytes),
		Name:   d.str(MaxStringBytes),
		Avatar: d.str(MaxStringBytes),
		Extra:  d.str(MaxStringBytes),
	}
	u.CreatedAtMs = d.varint()
	u.UpdatedAtMs = d.varint()
	u.Revision = d.uvarint()
	if err := d.err(); err != nil {
		return nil, err
	}
	return u, nil
}

// KV is a business metadata key. Its route key is Key.
type KV struct {
	Key            string
	Value          []byte
	Revision       uint64 // group revision of the last change; the ETag
	CreateRevision uint64
	UpdatedAtMs    int64
}

// EncodeKV encodes kv as a stored value.
func EncodeKV(kv *KV) []byte {
	e := encoder{b: make([]byte, 0, 24+len(kv.Key)+len(kv.Value))}
	e.u8(entityVersion)
	e.str(kv.Key)
	e.bytes(kv.Value)
	e.uvarint(kv.Revision)
	e.uvarint(kv.CreateRevision)
	e.varint(kv.UpdatedAtMs)
	return e.b
}

// DecodeKV decodes a stored business key.
func DecodeKV(b []byte) (*KV, error) {
	d := decoder{b: b}
	if v := d.u8(); v != entityVersion && d.err() == nil {
		d.fail("unknown kv version %d", v)
	}
	kv := &KV{Key: d.str(MaxKeyBytes), Value: d.bytes(MaxValueBytes)}
	kv.Revision = d.uvarint()
	kv.CreateRevision = d.uvarint()
	kv.UpdatedAtMs = d.varint()
	if err := d.err(); err != nil {
		return nil, err
	}
	return kv, nil
}
