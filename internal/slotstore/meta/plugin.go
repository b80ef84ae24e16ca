package meta

import "slotmeta/internal/slotstore"

// Plugin bindings: which plugins a user is bound to, with a per-binding
// config. Route key: the uid. Each binding has an index row
// (PluginIndexKey: plugin | uid, in the uid's hash slot) written and deleted
// in the same batch, so "the users of a plugin" is one ordered scan per
// hash slot.

// Limits of plugin bindings.
const (
	MaxPluginNoBytes     = 64
	MaxPluginConfigBytes = 16 << 10
	// MaxPluginsPerUser bounds the bindings of one user, so deleting a user
	// (which deletes each binding's index row) is bounded work in one batch.
	MaxPluginsPerUser = 256
)

// PluginBinding binds a user to a plugin.
type PluginBinding struct {
	UID         string
	PluginNo    string
	Config      string // opaque JSON, ≤ 16 KiB; "" when unset
	CreatedAtMs int64
	UpdatedAtMs int64
	Revision    uint64
}

// EncodePluginBinding encodes b as a stored value.
func EncodePluginBinding(b *PluginBinding) []byte {
	e := encoder{b: make([]byte, 0, 24+len(b.UID)+len(b.PluginNo)+len(b.Config))}
	e.u8(entityVersion)
	e.str(b.UID)
	e.str(b.PluginNo)
	e.str(b.Config)
	e.varint(b.CreatedAtMs)
	e.varint(b.UpdatedAtMs)
	e.uvarint(b.Revision)
	return e.b
}

// DecodePluginBinding decodes a stored plugin binding.
func DecodePluginBinding(raw []byte) (*PluginBinding, error) {
	d := decoder{b: raw}
	decodeVersion(&d, "plugin binding")
	b := &PluginBinding{UID: d.str(MaxKeyBytes), PluginNo: d.str(MaxPluginNoBytes), Config: d.str(MaxPluginConfigBytes)}
	b.CreatedAtMs = d.varint()
	b.UpdatedAtMs = d.varint()
	b.Revision = d.uvarint()
	if err := d.err(); err != nil {
		return nil, err
	}
	return b, nil
}

const (
	OpPutPlugin    Op = 14
	OpDeletePlugin Op = 15
)

// PutPlugin binds an existing user to a plugin, or replaces the binding's
// config (keeping its creation time). not_found when the user does not
// exist; conflict when a new binding would exceed MaxPluginsPerUser.
type PutPlugin struct {
	Header
	UID      string
	PluginNo string
	Config   string
}

// DeletePlugin unbinds a user from a plugin; not_found when not bound.
type DeletePlugin struct {
	Header
	UID      string
	PluginNo string
}

func (*PutPlugin) Op() Op                { return OpPutPlugin }
func (*DeletePlugin) Op() Op             { return OpDeletePlugin }
func (c *PutPlugin) RouteKey() string    { return c.UID }
func (c *DeletePlugin) RouteKey() string { return c.UID }

func (c *PutPlugin) encodeBody(e *encoder) { e.str(c.UID); e.str(c.PluginNo); e.str(c.Config) }
func (c *PutPlugin) decodeBody(d *decoder) {
	c.UID = d.str(MaxKeyBytes)
	c.PluginNo = d.str(MaxPluginNoBytes)
	c.Config = d.str(MaxPluginConfigBytes)
}
func (c *DeletePlugin) encodeBody(e *encoder) { e.str(c.UID); e.str(c.PluginNo) }
func (c *DeletePlugin) decodeBody(d *decoder) {
	c.UID = d.str(MaxKeyBytes)
	c.PluginNo = d.str(MaxPluginNoBytes)
}

const (
	QueryListUserPlugins QueryKind = 13
	QueryScanPluginUsers QueryKind = 14
)

// ListUserPlugins lists uid's bindings after AfterPlugin ("" from the
// start), in plugin order. Answer: *PluginPage, or nil when the user does
// not exist.
type ListUserPlugins struct {
	HashSlot    slotstore.HashSlot
	UID         string
	AfterPlugin string
	Limit       int
}

// ScanPluginUsers lists the bindings to PluginNo in the hash slots
// [FromSlot, ToSlot] — all owned by one group — in (slot, uid) order,
// starting after (FromSlot, AfterUID). Answer: *PluginPage.
type ScanPluginUsers struct {
	PluginNo string
	FromSlot slotstore.HashSlot
	ToSlot   slotstore.HashSlot
	AfterUID string
	Limit    int
}

// PluginPage answers ListUserPlugins and ScanPluginUsers; More is set when
// the scan stopped at Limit.
type PluginPage struct {
	Bindings []*PluginBinding
	More     bool
}

func (*ListUserPlugins) Kind() QueryKind                 { return QueryListUserPlugins }
func (*ScanPluginUsers) Kind() QueryKind                 { return QueryScanPluginUsers }
func (q *ListUserPlugins) RouteSlot() slotstore.HashSlot { return q.HashSlot }
func (q *ScanPluginUsers) RouteSlot() slotstore.HashSlot { return q.FromSlot }

func (q *ListUserPlugins) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	e.str(q.UID)
	e.str(q.AfterPlugin)
	encodeLimit(e, q.Limit)
}

func (q *ListUserPlugins) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.UID = d.str(MaxKeyBytes)
	q.AfterPlugin = d.str(MaxPluginNoBytes)
	q.Limit = decodeLimit(d)
}

func (q *ScanPluginUsers) encodeQuery(e *encoder) {
	e.str(q.PluginNo)
	e.u16(uint16(q.FromSlot))
	e.u16(uint16(q.ToSlot))
	e.str(q.AfterUID)
	encodeLimit(e, q.Limit)
}

func (q *ScanPluginUsers) decodeQuery(d *decoder) {
	q.PluginNo = d.str(MaxPluginNoBytes)
	q.FromSlot = slotstore.HashSlot(d.u16())
	q.ToSlot = slotstore.HashSlot(d.u16())
	q.AfterUID = d.str(MaxKeyBytes)
	q.Limit = decodeLimit(d)
}

const answerPluginPage = 13

func init() {
	registerCommand(OpPutPlugin, func() Command { return &PutPlugin{} })
	registerCommand(OpDeletePlugin, func() Command { return &DeletePlugin{} })
	registerQuery(QueryListUserPlugins, func() Query { return &ListUserPlugins{} })
	registerQuery(QueryScanPluginUsers, func() Query { return &ScanPluginUsers{} })
	registerAnswer(answerPluginPage, (*PluginPage)(nil),
		func(e *encoder, v any) {
			p := v.(*PluginPage)
			encodeItems(e, p.Bindings, EncodePluginBinding)
			e.bool(p.More)
		},
		func(d *decoder) (any, error) {
			p := &PluginPage{Bindings: decodeItems(d, DecodePluginBinding)}
			p.More = d.bool()
			return p, d.err()
		})
}
