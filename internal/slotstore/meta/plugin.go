package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

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

func (b *PluginBinding) code(c *coder) {
	c.version(entityVersion, "plugin binding")
	c.plugin(&b.UID, &b.PluginNo)
	c.str(&b.Config, MaxPluginConfigBytes, "config")
	c.stamps(&b.CreatedAtMs, &b.UpdatedAtMs, &b.Revision)
}

// plugin codes the identity of a binding: uid, then plugin.
func (c *coder) plugin(uid, pluginNo *string) {
	c.str(uid, MaxKeyBytes, "uid")
	c.str(pluginNo, MaxPluginNoBytes, "plugin no")
}

// EncodePluginBinding encodes b as a stored value.
func EncodePluginBinding(b *PluginBinding) []byte { return encodeEntity(b) }

// DecodePluginBinding decodes a stored plugin binding.
func DecodePluginBinding(raw []byte) (*PluginBinding, error) { return decodeEntity[PluginBinding](raw) }

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

func (c *PutPlugin) codeBody(k *coder) {
	k.plugin(&c.UID, &c.PluginNo)
	k.str(&c.Config, MaxPluginConfigBytes, "config")
}

func (c *DeletePlugin) codeBody(k *coder) { k.plugin(&c.UID, &c.PluginNo) }

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

func (q *ListUserPlugins) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.plugin(&q.UID, &q.AfterPlugin)
	c.pageLimit(&q.Limit)
}

func (q *ScanPluginUsers) codeQuery(c *coder) {
	c.str(&q.PluginNo, MaxPluginNoBytes, "plugin no")
	c.slot(&q.FromSlot)
	c.slot(&q.ToSlot)
	c.str(&q.AfterUID, MaxKeyBytes, "after uid")
	c.pageLimit(&q.Limit)
}

func (p *PluginPage) code(c *coder) { page(c, &p.Bindings, &p.More) }

const answerPluginPage = 13

func init() {
	registerCommand[PutPlugin]()
	registerCommand[DeletePlugin]()
	registerQuery[ListUserPlugins]()
	registerQuery[ScanPluginUsers]()
	registerPageAnswer[PluginPage](answerPluginPage)
}
