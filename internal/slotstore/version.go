package slotstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// VersionHeader carries, on a node's request to join a cluster, the
// version the node runs (absent: a release before cluster versions, or an
// operator's registration by hand).
const VersionHeader = "Slotmeta-Version"

// Version is a release line of slotmeta as far as replicas are concerned:
// major.minor. What replicas apply and store — the commands of the slot
// groups' and the controller's logs, their fields, stored formats — changes
// only from one minor to the next; a patch release never changes it, so
// patches are not part of the version.
//
// The cluster version (package clusterversion) is a Version too: the lowest
// one every member runs, recorded in the controller once they all do. The
// zero Version is "not reported": a node of a release that predates cluster
// versions, or a controller state that never recorded one.
type Version struct {
	Major uint16
	Minor uint16
}

// String is "major.minor"; the zero Version is "unknown".
func (v Version) String() string {
	if v.IsZero() {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// IsZero reports whether v was never set.
func (v Version) IsZero() bool { return v == Version{} }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	return v.Minor < w.Minor
}

// AtLeast reports whether v is w or newer.
func (v Version) AtLeast(w Version) bool { return !v.Less(w) }

// ParseVersion reads "major.minor", with an optional leading "v" and an
// optional ".patch" (ignored: see Version) — so "v0.2.1" and "0.2" are the
// same line.
func ParseVersion(s string) (Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.Split(t, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("version %q: want major.minor", s)
	}
	var nums [3]uint64
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return Version{}, fmt.Errorf("version %q: %q is not a number", s, p)
		}
		nums[i] = n
	}
	return Version{Major: uint16(nums[0]), Minor: uint16(nums[1])}, nil
}

// MarshalJSON writes "major.minor" ("" for the zero Version).
func (v Version) MarshalJSON() ([]byte, error) {
	if v.IsZero() {
		return []byte(`""`), nil
	}
	return json.Marshal(v.String())
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *Version) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		*v = Version{}
		return nil
	}
	p, err := ParseVersion(s)
	if err != nil {
		return err
	}
	*v = p
	return nil
}
