package meta

import "slotmeta/internal/slotstore"

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

// EncodeDevice encodes d as a stored value.
func EncodeDevice(d *Device) []byte {
	e := encoder{b: make([]byte, 0, 24+len(d.UID)+len(d.Token))}
	e.u8(entityVersion)
	e.str(d.UID)
	e.u8(d.Flag)
	e.str(d.Token)
	e.u8(d.Level)
	e.varint(d.CreatedAtMs)
	e.varint(d.UpdatedAtMs)
	e.uvarint(d.Revision)
	return e.b
}

// DecodeDevice decodes a stored device.
func DecodeDevice(b []byte) (*Device, error) {
	d := decoder{b: b}
	decodeVersion(&d, "device")
	v := &Device{UID: d.str(MaxKeyBytes), Flag: d.u8(), Token: d.str(MaxDeviceTokenBytes), Level: d.u8()}
	v.CreatedAtMs = d.varint()
	v.UpdatedAtMs = d.varint()
	v.Revision = d.uvarint()
	if err := d.err(); err != nil {
		return nil, err
	}
	return v, nil
}

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

func (c *PutDevice) encodeBody(e *encoder) {
	e.str(c.UID)
	e.u8(c.Flag)
	e.str(c.Token)
	e.u8(c.Level)
}

func (c *PutDevice) decodeBody(d *decoder) {
	c.UID = d.str(MaxKeyBytes)
	c.Flag = d.u8()
	c.Token = d.str(MaxDeviceTokenBytes)
	c.Level = d.u8()
}

func (c *DeleteDevice) encodeBody(e *encoder) { e.str(c.UID); e.u8(c.Flag) }
func (c *DeleteDevice) decodeBody(d *decoder) { c.UID = d.str(MaxKeyBytes); c.Flag = d.u8() }

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

func (q *GetDevice) encodeQuery(e *encoder) { e.u16(uint16(q.HashSlot)); e.str(q.UID); e.u8(q.Flag) }
func (q *GetDevice) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.UID = d.str(MaxKeyBytes)
	q.Flag = d.u8()
}

func (q *ListDevices) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	e.str(q.UID)
	e.u16(q.From)
	encodeLimit(e, q.Limit)
}

func (q *ListDevices) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.UID = d.str(MaxKeyBytes)
	q.From = d.u16()
	if q.From > 256 {
		d.fail("device flag %d past 256", q.From)
	}
	q.Limit = decodeLimit(d)
}

const (
	answerDevice     = 10
	answerDevicePage = 11
)

func init() {
	registerCommand(OpPutDevice, func() Command { return &PutDevice{} })
	registerCommand(OpDeleteDevice, func() Command { return &DeleteDevice{} })
	registerQuery(QueryGetDevice, func() Query { return &GetDevice{} })
	registerQuery(QueryListDevices, func() Query { return &ListDevices{} })
	registerAnswer(answerDevice, (*Device)(nil),
		func(e *encoder, v any) { e.bytes(EncodeDevice(v.(*Device))) },
		func(d *decoder) (any, error) { return DecodeDevice(d.bytes(MaxEntryBytes)) })
	registerAnswer(answerDevicePage, (*DevicePage)(nil),
		func(e *encoder, v any) {
			p := v.(*DevicePage)
			encodeItems(e, p.Devices, EncodeDevice)
			e.bool(p.More)
		},
		func(d *decoder) (any, error) {
			p := &DevicePage{Devices: decodeItems(d, DecodeDevice)}
			p.More = d.bool()
			return p, d.err()
		})
}
