package ctrlrecovery

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// roleFile holds the node's role in the controller group; none: a voter.
const roleFile = "controller-role"

// Role is a node's role in the controller group.
type Role string

// The roles in the controller group.
const (
	RoleVoter     Role = "voter"
	RoleNonVoting Role = "non-voting"
)

// ReadRole reads the role file of the data directory dir.
func ReadRole(dir string) (Role, error) {
	b, err := os.ReadFile(filepath.Join(dir, roleFile))
	if errors.Is(err, os.ErrNotExist) {
		return RoleVoter, nil
	}
	if err != nil {
		return "", fmt.Errorf("cluster: read controller role: %w", err)
	}
	switch r := Role(strings.TrimSpace(string(b))); r {
	case RoleVoter, RoleNonVoting:
		return r, nil
	default:
		return "", fmt.Errorf("cluster: unknown controller role %q in %s", r, roleFile)
	}
}

// WriteRole writes role into the data directory dir's role file.
func WriteRole(dir string, role Role) error {
	p := filepath.Join(dir, roleFile)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(string(role)+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
