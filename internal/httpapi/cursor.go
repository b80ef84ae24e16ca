package httpapi

import (
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strconv"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

// cursorVersion is the first byte of every user-listing cursor.
const cursorVersion = 1

// maxCursorLen bounds an encoded cursor: version, slot and a longest uid.
var maxCursorLen = base64.RawURLEncoding.EncodedLen(3 + maxUIDBytes)

// position is where a user listing continues: after user afterUID in hash
// slot slot, or at the start of slot when afterUID is "". Slot
// HashSlotCount means the listing is done.
type position struct {
	slot     slotstore.HashSlot
	afterUID string
}

// encodeCursor renders p as an opaque cursor: base64url (no padding) of
// version(1) | hash slot (u16 BE) | uid. It names a position, not a node.
func encodeCursor(p position) string {
	b := make([]byte, 3, 3+len(p.afterUID))
	b[0] = cursorVersion
	binary.BigEndian.PutUint16(b[1:], uint16(p.slot))
	return base64.RawURLEncoding.EncodeToString(append(b, p.afterUID...))
}

// decodeCursor parses encodeCursor's output; "" is the start of the listing.
func decodeCursor(s string) (position, error) {
	if s == "" {
		return position{}, nil
	}
	bad := invalidField("cursor", "is not a cursor this API issued")
	if len(s) > maxCursorLen {
		return position{}, bad
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < 3 || b[0] != cursorVersion {
		return position{}, bad
	}
	p := position{slot: slotstore.HashSlot(binary.BigEndian.Uint16(b[1:])), afterUID: string(b[3:])}
	if !p.slot.Valid() || (p.afterUID != "" && uidProblem(p.afterUID) != "") {
		return position{}, bad
	}
	return p, nil
}

// userPage is the answer of GET /v1/users.
type userPage struct {
	Items      []userJSON `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// listUsers is GET /v1/users?cursor=&limit=&consistency=: every user, in
// (hash slot, uid) order. Consecutive hash slots owned by one group are read
// with one ScanUsers query; queries continue until the page is full or hash
// slot 255 is done. A page may come back short, even empty, with a cursor.
func (a *api) listUsers(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r)
	if err != nil {
		return err
	}
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	c, err := consistencyParam(q)
	if err != nil {
		return err
	}
	cur, _, err := single(q, "cursor")
	if err != nil {
		return err
	}
	pos, err := decodeCursor(cur)
	if err != nil {
		return err
	}
	snap, err := a.snapshot()
	if err != nil {
		return err
	}
	table := snap.Table()
	if table == nil {
		return slotstore.Errorf(slotstore.CodeRouteNotReady, "no routing table yet")
	}
	w.Header().Set(hdrRouteRevision, strconv.FormatUint(table.Revision(), 10))

	page := userPage{Items: make([]userJSON, 0, min(limit, defaultPageSize))}
	for pos.slot < slotstore.HashSlotCount && len(page.Items) < limit {
		end := pos.slot // the last hash slot of the run owned by pos.slot's group
		for end+1 < slotstore.HashSlotCount && table.Group(end+1) == table.Group(pos.slot) {
			end++
		}
		want := limit - len(page.Items)
		ans, _, err := a.be.Read(r.Context(), &meta.ScanUsers{FromSlot: pos.slot, ToSlot: end, AfterUID: pos.afterUID, Limit: want}, c)
		if err != nil {
			return err
		}
		scan, ok := ans.(*meta.UserPage)
		if !ok || scan == nil {
			return internalf("ScanUsers answered %T", ans)
		}
		users, more := scan.Users, scan.More
		if len(users) > want {
			users, more = users[:want], true
		}
		for _, u := range users {
			page.Items = append(page.Items, userOut(u))
		}
		if !more {
			pos = position{slot: end + 1}
			continue
		}
		if len(users) == 0 {
			return internalf("ScanUsers of hash slots %d-%d stopped early without a user", pos.slot, end)
		}
		last := users[len(users)-1].UID
		next := position{slot: slotstore.HashSlotOfString(last), afterUID: last}
		if next.slot < pos.slot || next.slot > end || (next.slot == pos.slot && last <= pos.afterUID) {
			return internalf("ScanUsers of hash slots %d-%d went backwards to user %q", pos.slot, end, last)
		}
		pos = next
	}
	if pos.slot < slotstore.HashSlotCount {
		page.NextCursor = encodeCursor(pos)
	}
	a.writeJSON(w, r, http.StatusOK, page)
	return nil
}
