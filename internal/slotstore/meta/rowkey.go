package meta

import (
	"fmt"
)

// RowKey's inverse for the watched tables: the change log stores a row's
// primary key as it is in the store (keys.go), and a watcher is shown what
// it names.

// KeyParts is what a watched row's primary key names; the fields its
// table does not have are zero.
type KeyParts struct {
	UID         string
	Key         string // a business key
	ChannelType uint8
	ChannelID   string
	DeviceFlag  uint8
	Plugin      string
}

// ParseKey splits the primary key pk of a row of watched table t. With
// clear set, pk is the prefix a ChangeClear names (a channel's list, a
// user's devices) and only the parent's parts are in it.
func ParseKey(t Table, pk []byte, clear bool) (KeyParts, error) {
	var k KeyParts
	rest, err := pk, error(nil)
	switch t {
	case TableUser, TableSystemUID:
		k.UID = string(pk)
		return k, nil
	case TableKV:
		k.Key = string(pk)
		return k, nil
	case TableChannel, TableRuntime:
		if len(pk) < 1 {
			return k, fmt.Errorf("%w: channel key of %d bytes", ErrMalformed, len(pk))
		}
		k.ChannelType, k.ChannelID = pk[0], string(pk[1:])
		return k, nil
	case TableDevice, TablePlugin, TableMembership, TableCmdBinding:
		if k.UID, rest, err = cutPart(pk); err != nil {
			return k, err
		}
		switch {
		case clear:
		case t == TableDevice:
			if len(rest) != 1 {
				return k, fmt.Errorf("%w: device flag of %d bytes", ErrMalformed, len(rest))
			}
			k.DeviceFlag = rest[0]
		case t == TablePlugin:
			k.Plugin = string(rest)
		default:
			if len(rest) < 1 {
				return k, fmt.Errorf("%w: channel of %d bytes", ErrMalformed, len(rest))
			}
			k.ChannelType, k.ChannelID = rest[0], string(rest[1:])
		}
		return k, nil
	case TableSubscriber, TableDenylist, TableAllowlist:
		if len(pk) < 1 {
			return k, fmt.Errorf("%w: list key of %d bytes", ErrMalformed, len(pk))
		}
		k.ChannelType = pk[0]
		if k.ChannelID, rest, err = cutPart(pk[1:]); err != nil {
			return k, err
		}
		if !clear {
			k.UID = string(rest)
		}
		return k, nil
	}
	return k, fmt.Errorf("%w: table %d is not watched", ErrMalformed, t)
}

// cutPart reads a non-final string part (appendPart) off the front of b.
func cutPart(b []byte) (string, []byte, error) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			out = append(out, b[i])
			continue
		}
		if i+1 == len(b) {
			break
		}
		switch b[i+1] {
		case 0xFF:
			out = append(out, 0)
			i++
		case 0x01:
			return string(out), b[i+2:], nil
		default:
			return "", nil, fmt.Errorf("%w: bad escape 0x00 0x%02x in a key part", ErrMalformed, b[i+1])
		}
	}
	return "", nil, fmt.Errorf("%w: unterminated key part", ErrMalformed)
}
