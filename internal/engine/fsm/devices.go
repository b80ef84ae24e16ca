package fsm

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// userExists reports whether uid is a user (through the batch).
func (a *applier) userExists(hs slotstore.HashSlot, uid string) bool {
	_, found := a.get(meta.UserKey(a.sm.cfg.Group, hs, uid))
	return found
}

func userNotFound(uid string) meta.Result {
	return meta.Result{Code: slotstore.CodeNotFound, Message: fmt.Sprintf("user %q not found", uid)}
}

// deviceApplier applies a user's device commands.
type deviceApplier struct{ *applier }

func (a deviceApplier) putDevice(c *meta.PutDevice) meta.Result {
	if !a.userExists(c.HashSlot, c.UID) {
		return userNotFound(c.UID)
	}
	key := meta.DeviceKey(a.sm.cfg.Group, c.HashSlot, c.UID, c.Flag)
	d := &meta.Device{UID: c.UID, Flag: c.Flag, Token: c.Token, Level: c.Level, CreatedAtMs: c.TimeMs, UpdatedAtMs: c.TimeMs}
	if old, found := readRow(a.applier, key, meta.DecodeDevice); found {
		d.CreatedAtMs = old.CreatedAtMs
	}
	return writeRow(a.applier, key, d, &d.Revision, meta.EncodeDevice)
}

func (a deviceApplier) deleteDevice(c *meta.DeleteDevice) meta.Result {
	key := meta.DeviceKey(a.sm.cfg.Group, c.HashSlot, c.UID, c.Flag)
	if _, found := a.get(key); !found {
		return meta.Result{Code: slotstore.CodeNotFound, Message: fmt.Sprintf("device %d of user %q not found", c.Flag, c.UID)}
	}
	a.del(key)
	return meta.Result{Revision: a.nextRevision()}
}

// deleteUserDevices deletes every device of uid (part of deleting the user).
// A user has at most 256 devices, all under one prefix: one range deletion
// (none when the user has no device).
func (a deviceApplier) deleteUserDevices(hs slotstore.HashSlot, uid string) {
	a.clearRows(meta.DevicePrefix(a.sm.cfg.Group, hs, uid))
}

// getDevice answers meta.GetDevice: *meta.Device or a nil one.
func (s reader) getDevice(q *meta.GetDevice) (*meta.Device, error) {
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	return getRow(s, meta.DeviceKey(s.cfg.Group, q.HashSlot, q.UID, q.Flag), meta.DecodeDevice)
}

// listDevices answers meta.ListDevices: *meta.DevicePage, nil when the user
// does not exist.
func (s reader) listDevices(q *meta.ListDevices) (*meta.DevicePage, error) {
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	if _, found, err := s.get(meta.UserKey(s.cfg.Group, q.HashSlot, q.UID)); err != nil || !found {
		return nil, err
	}
	page := &meta.DevicePage{}
	if q.From > 255 {
		return page, nil
	}
	var err error
	page.Devices, page.More, err = appendPage(s.db, meta.DevicePrefix(s.cfg.Group, q.HashSlot, q.UID),
		meta.DeviceKey(s.cfg.Group, q.HashSlot, q.UID, uint8(q.From)), scanLimit(q.Limit), page.Devices, meta.DecodeDevice)
	if err != nil {
		return nil, err
	}
	return page, nil
}
