package httpapi

import (
	"net/http"
	"strconv"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// deviceRoutes serves /v1/users/{uid}/devices. A device belongs to an
// existing user (404 otherwise) and is deleted with it.
type deviceRoutes struct{ *api }

// deviceRequest is the body of PUT /v1/users/{uid}/devices/{device_flag}.
type deviceRequest struct {
	Token       string `json:"token" validate:"required,maxbytes=1024"`
	DeviceLevel int    `json:"device_level" validate:"min=0,max=255"`
}

// deviceJSON is a device as the API shows it.
type deviceJSON struct {
	UID         string `json:"uid"`
	DeviceFlag  uint8  `json:"device_flag"`
	Token       string `json:"token"`
	DeviceLevel uint8  `json:"device_level"`
	CreatedAtMs int64  `json:"created_at_ms"`
	UpdatedAtMs int64  `json:"updated_at_ms"`
	Revision    uint64 `json:"revision"`
}

func deviceOut(d *meta.Device) deviceJSON {
	return deviceJSON{UID: d.UID, DeviceFlag: d.Flag, Token: d.Token, DeviceLevel: d.Level,
		CreatedAtMs: d.CreatedAtMs, UpdatedAtMs: d.UpdatedAtMs, Revision: d.Revision}
}

// deviceFlagProblem says what is wrong with s as a device flag, or "" if
// nothing: a decimal integer from 0 to 255, without sign or leading zeros.
func deviceFlagProblem(s string) string {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 255 || strconv.Itoa(n) != s {
		return "must be a decimal integer from 0 to 255"
	}
	return ""
}

// deviceKey names a device: its user and flag.
type deviceKey struct {
	uid  string
	flag uint8
}

// deviceFromPath parses the uid and device flag of a device path.
func deviceFromPath(r *http.Request) (deviceKey, error) {
	uid, err := userFromPath(r)
	if err != nil {
		return deviceKey{}, err
	}
	f, err := pathParam(r, "device_flag", deviceFlagProblem)
	if err != nil {
		return deviceKey{}, err
	}
	n, _ := strconv.Atoi(f)
	return deviceKey{uid, uint8(n)}, nil
}

// deviceRow is a device: GET /v1/users/{uid}/devices/{device_flag};
// DELETE: 204, or 404.
var deviceRow = row[deviceKey, meta.Device, deviceJSON]{
	noun: "device", path: deviceFromPath, key: func(d deviceKey) string { return d.uid },
	decode: meta.DecodeDevice, out: deviceOut,
	get: func(d deviceKey) meta.For[*meta.Device] {
		return &meta.GetDevice{HashSlot: slotstore.HashSlotOfString(d.uid), UID: d.uid, Flag: d.flag}
	},
	missing: func(d deviceKey) error { return notFound("device %d of user %q not found", d.flag, d.uid) },
	del:     func(d deviceKey) meta.Command { return &meta.DeleteDevice{UID: d.uid, Flag: d.flag} },
}

// putDevice is PUT /v1/users/{uid}/devices/{device_flag}: create or replace
// the device (200); 404 when the user does not exist.
func putDevice(d deviceKey, req *deviceRequest) meta.Command {
	return &meta.PutDevice{UID: d.uid, Flag: d.flag, Token: req.Token, Level: uint8(req.DeviceLevel)}
}

// listDevices is GET /v1/users/{uid}/devices?cursor=&limit=: the user's
// devices in flag order; 404 when the user does not exist.
func (a deviceRoutes) listDevices(w http.ResponseWriter, r *http.Request) error {
	uid, lq, after, err := userKeyedList(r, tagDevices, deviceFlagProblem)
	if err != nil {
		return err
	}
	from := uint16(0)
	if after != "" {
		n, _ := strconv.Atoi(after)
		from = uint16(n) + 1
	}
	q := &meta.ListDevices{HashSlot: slotstore.HashSlotOfString(uid), UID: uid, From: from, Limit: lq.limit}
	p, err := readWatchedPage(a.api, w, r, uid, lq, q, func() error { return userRow.missing(uid) })
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, pageOf(p.Devices, p.More, deviceOut,
		func(last *meta.Device) string { return packCursor(tagDevices, []byte(strconv.Itoa(int(last.Flag)))) }))
	return nil
}
