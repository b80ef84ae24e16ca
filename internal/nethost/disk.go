package nethost

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// A host's disk: with Options.DiskBytes each node's data directory is a
// tmpfs of that size, its own, so that a test fills one node's disk as
// something else on that machine would (FillDisk) and frees it again
// (FreeDisk), the node running on. tmpfs counts only what is written (or
// fallocated), so a 256 MiB disk costs no memory until filled.

// fillerFile is the file FillDisk writes, in the node's data directory
// (the node does not read it).
const fillerFile = "nethost-filler"

// mountDisk makes h's data directory a tmpfs of the configured size.
func (h *Host) mountDisk() error {
	if err := os.MkdirAll(h.dataDir, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", h.dataDir, "tmpfs", 0, fmt.Sprintf("size=%d", h.c.o.DiskBytes)); err != nil {
		return fmt.Errorf("nethost: mount a %d-byte tmpfs on %s: %w", h.c.o.DiskBytes, h.dataDir, err)
	}
	h.mounted = true
	return nil
}

// unmountDisk undoes mountDisk once the node's processes are gone.
func (h *Host) unmountDisk() {
	if h.mounted {
		_ = syscall.Unmount(h.dataDir, syscall.MNT_DETACH)
		h.mounted = false
	}
}

// FillDisk leaves about left bytes free on the host's disk (Options.DiskBytes)
// with a file of the rest, its blocks allocated; FreeDisk removes it.
// Filling again replaces the file.
func (h *Host) FillDisk(left int64) error {
	if !h.mounted {
		return fmt.Errorf("nethost: node %d has no disk of its own (Options.DiskBytes)", h.ID)
	}
	h.FreeDisk()
	var st syscall.Statfs_t
	if err := syscall.Statfs(h.dataDir, &st); err != nil {
		return err
	}
	size := int64(st.Bavail)*st.Bsize - left
	if size <= 0 {
		return nil
	}
	f, err := os.Create(filepath.Join(h.dataDir, fillerFile))
	if err != nil {
		return err
	}
	defer f.Close()
	return syscall.Fallocate(int(f.Fd()), 0, 0, size)
}

// FreeDisk removes what FillDisk wrote.
func (h *Host) FreeDisk() { _ = os.Remove(filepath.Join(h.dataDir, fillerFile)) }
