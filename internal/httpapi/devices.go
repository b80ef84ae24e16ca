package httpapi

import (
	"net/http"
	"strconv"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
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

// deviceTarget parses the uid and device flag of a device path.
func deviceTarget(r *http.Request) (string, uint8, error) {
	uid, err := pathParam(r, "uid", uidProblem)
	if err != nil {
		return "", 0, err
	}
	f, err := pathParam(r, "device_flag", deviceFlagProblem)
	if err != nil {
		return "", 0, err
	}
	n, _ := strconv.Atoi(f)
	return uid, uint8(n), nil
}

// putDevice is PUT /v1/users/{uid}/devices/{device_flag}: create or replace
// the device (200); 404 when the user does not exist.
func (a deviceRoutes) putDevice(w http.ResponseWriter, r *http.Request) error {
	uid, flag, err := deviceTarget(r)
	if err != nil {
		return err
	}
	var req deviceRequest
	idemKey, f, err := a.writeBody(w, r, &req)
	if err != nil {
		return err
	}
	res, err := a.propose(w, r, target{uid, f}, idemKey,
		&meta.PutDevice{UID: uid, Flag: flag, Token: req.Token, Level: uint8(req.DeviceLevel)})
	if err != nil {
		return err
	}
	d, err := resultEntity(res, "device", meta.DecodeDevice)
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, deviceOut(d))
	return nil
}

// getDevice is GET /v1/users/{uid}/devices/{device_flag}.
func (a deviceRoutes) getDevice(w http.ResponseWriter, r *http.Request) error {
	uid, flag, err := deviceTarget(r)
	if err != nil {
		return err
	}
	c, f, err := readParams(r)
	if err != nil {
		return err
	}
	d, err := read(a.api, w, r, target{uid, f}, c, &meta.GetDevice{HashSlot: slotstore.HashSlotOfString(uid), UID: uid, Flag: flag})
	if err != nil {
		return err
	}
	if d == nil {
		return slotstore.Errorf(slotstore.CodeNotFound, "device %d of user %q not found", flag, uid)
	}
	a.writeJSON(w, r, http.StatusOK, deviceOut(d))
	return nil
}

// deleteDevice is DELETE /v1/users/{uid}/devices/{device_flag}: 204, or 404.
func (a deviceRoutes) deleteDevice(w http.ResponseWriter, r *http.Request) error {
	uid, flag, err := deviceTarget(r)
	if err != nil {
		return err
	}
	return a.remove(w, r, uid, &meta.DeleteDevice{UID: uid, Flag: flag})
}

// listDevices is GET /v1/users/{uid}/devices?cursor=&limit=: the user's
// devices in flag order; 404 when the user does not exist.
func (a deviceRoutes) listDevices(w http.ResponseWriter, r *http.Request) error {
	uid, err := pathParam(r, "uid", uidProblem)
	if err != nil {
		return err
	}
	lq, after, err := keyedListQuery(r, tagDevices, deviceFlagProblem)
	if err != nil {
		return err
	}
	from := uint16(0)
	if after != "" {
		n, _ := strconv.Atoi(after)
		from = uint16(n) + 1
	}
	p, err := read(a.api, w, r, target{uid, lq.fence}, lq.c, &meta.ListDevices{HashSlot: slotstore.HashSlotOfString(uid), UID: uid, From: from, Limit: lq.limit})
	if err != nil {
		return err
	}
	if p == nil {
		return slotstore.Errorf(slotstore.CodeNotFound, "user %q not found", uid)
	}
	a.writeJSON(w, r, http.StatusOK, pageOf(p.Devices, p.More, deviceOut,
		func(last *meta.Device) string { return packCursor(tagDevices, []byte(strconv.Itoa(int(last.Flag)))) }))
	return nil
}

// resultEntity decodes the entity a successful command wrote.
func resultEntity[T any](res meta.Result, what string, decode func([]byte) (T, error)) (T, error) {
	var zero T
	if len(res.Value) == 0 {
		return zero, internalf("the write succeeded but its result carries no %s", what)
	}
	v, err := decode(res.Value)
	if err != nil {
		return zero, slotstore.Wrap(slotstore.CodeInternal, err, "decoding the written "+what)
	}
	return v, nil
}
