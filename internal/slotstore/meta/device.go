package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

// Devices: the push/login devices of a user, at most one per device flag
// (0–255). Route key: the uid. A device belongs to an existing user; deleting
// the user deletes its devices in the same batch.

// MaxDeviceTokenBytes bounds a device token.
const MaxDeviceTokenBytes = 1 << 10

// Device is one device of a user.
type Device struct {
	UID         string
	Flag        uint8 // the device kind (app, web, pc, …); one device per flag
	Token       string
	Level       uint8 // the client's device level (e.g. 0 slave, 1 master)
	CreatedAtMs int64
	UpdatedAtMs int64
	Revision    uint64
}

func (d *Device) code(c *coder) {
	c.version(entityVersion, "device")
	c.device(&d.UID, &d.Flag, &d.Token, &d.Level)
	c.stamps(&d.CreatedAtMs, &d.UpdatedAtMs, &d.Revision)
}

// device codes what a client sets on a device: a row and PutDevice share it.
func (c *coder) device(uid *string, flag *uint8, token *string, level *uint8) {
	c.str(uid, MaxKeyBytes, "uid")
	c.u8(flag)
	c.str(token, MaxDeviceTokenBytes, "token")
	c.u8(level)
}

// EncodeDevice encodes d as a stored value.
func EncodeDevice(d *Device) []byte { return encodeEntity(d) }

// DecodeDevice decodes a stored device.
func DecodeDevice(b []byte) (*Device, error) { return decodeEntity[Device](b) }

const (
	OpPutDevice    Op = 10
	OpDeleteDevice Op = 11
)

// PutDevice creates or replaces a device of an existing user (not_found
// when the user does not exist), keeping its creation time.
type PutDevice struct {
	Header
	UID   string
	Flag  uint8
	Token string
	Level uint8
}

// DeleteDevice deletes one device; not_found when absent.
type DeleteDevice struct {
	Header
	UID  string
	Flag uint8
}

func (*PutDevice) Op() Op                { return OpPutDevice }
func (*DeleteDevice) Op() Op             { return OpDeleteDevice }
func (c *PutDevice) RouteKey() string    { return c.UID }
func (c *DeleteDevice) RouteKey() string { return c.UID }

func (c *PutDevice) codeBody(k *coder)    { k.device(&c.UID, &c.Flag, &c.Token, &c.Level) }
func (c *DeleteDevice) codeBody(k *coder) { k.str(&c.UID, MaxKeyBytes, "uid"); k.u8(&c.Flag) }

const (
	QueryGetDevice   QueryKind = 10
	QueryListDevices QueryKind = 11
)

// GetDevice reads one device. Answer: *Device or nil.
type GetDevice struct {
	HashSlot slotstore.HashSlot
	UID      string
	Flag     uint8
}

// ListDevices lists the devices of uid with flag ≥ From, in flag order.
// Answer: *DevicePage, or nil when the user does not exist.
type ListDevices struct {
	HashSlot slotstore.HashSlot
	UID      string
	From     uint16 // the first flag to list, 0–256 (256 lists nothing)
	Limit    int
}

// DevicePage is ListDevices' answer; More is set when it stopped at Limit.
type DevicePage struct {
	Devices []*Device
	More    bool
}

func (*GetDevice) Kind() QueryKind                   { return QueryGetDevice }
func (*ListDevices) Kind() QueryKind                 { return QueryListDevices }
func (q *GetDevice) RouteSlot() slotstore.HashSlot   { return q.HashSlot }
func (q *ListDevices) RouteSlot() slotstore.HashSlot { return q.HashSlot }

func (q *GetDevice) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.str(&q.UID, MaxKeyBytes, "uid")
	c.u8(&q.Flag)
}

func (q *ListDevices) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.str(&q.UID, MaxKeyBytes, "uid")
	c.u16(&q.From)
	if q.From > 256 {
		c.fail("device flag %d past 256", q.From)
	}
	c.pageLimit(&q.Limit)
}

func (p *DevicePage) code(c *coder) { page(c, &p.Devices, &p.More) }

const (
	answerDevice     = 10
	answerDevicePage = 11
)

func init() {
	registerCommand[PutDevice]()
	registerCommand[DeleteDevice]()
	registerQuery[GetDevice]()
	registerQuery[ListDevices]()
	registerAnswers[Device, DevicePage](answerDevice, answerDevicePage)
}
