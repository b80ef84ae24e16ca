package nethost

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The cgroup v1 cpu and cpuacct controllers' mount points.
const (
	cgroupCPU  = "/sys/fs/cgroup/cpu"
	cgroupAcct = "/sys/fs/cgroup/cpuacct"
)

// CanCap returns nil when Options.CPU can cap nodes (a cgroup v1 cpu
// controller is mounted and writable), else why not.
func CanCap() error {
	if st, err := os.Stat(filepath.Join(cgroupCPU, "cpu.cfs_quota_us")); err != nil || st.IsDir() {
		return errors.New("nethost: no cgroup v1 cpu controller at " + cgroupCPU + " (per-node CPU caps)")
	}
	return nil
}

// capCPU moves pid into the host's own cpu cgroup, limited to cores of a
// core (cfs quota over a 100 ms period). The cgroup is made on first use and
// removed by Close once the process has exited.
func (h *Host) capCPU(pid int, cores float64) error {
	dir := filepath.Join(cgroupCPU, "slotmeta-"+h.NS)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	h.cgroup = dir
	const period = 100000
	for file, v := range map[string]int{"cpu.cfs_period_us": period, "cpu.cfs_quota_us": int(cores * period)} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.Itoa(v)), 0o644); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return err
	}
	// CPU accounting, where cpuacct is a hierarchy of its own.
	if acct := filepath.Join(cgroupAcct, "slotmeta-"+h.NS); cgroupAcct != cgroupCPU {
		if err := os.MkdirAll(acct, 0o755); err == nil {
			h.acct = acct
			_ = os.WriteFile(filepath.Join(acct, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
		}
	}
	return nil
}

// removeCgroups removes the host's cgroups (its process has exited).
func (h *Host) removeCgroups() {
	for _, d := range []string{h.cgroup, h.acct} {
		if d != "" {
			_ = os.Remove(d)
		}
	}
}

// CPUSeconds is the CPU time the host's cgroup used so far (0 without a cap).
func (h *Host) CPUSeconds() float64 {
	if h.cgroup == "" {
		return 0
	}
	dir := h.acct
	if dir == "" {
		dir = h.cgroup // cpu and cpuacct as one hierarchy
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		return 0
	}
	ns, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return float64(ns) / 1e9
}
