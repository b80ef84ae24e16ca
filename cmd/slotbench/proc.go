package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/PID/stat: 100 on
// every Linux this runs on (getconf CLK_TCK).
const clockTicks = 100

// procSample is one reading of a process's CPU time and memory.
type procSample struct {
	PID    int     `json:"pid"`
	Name   string  `json:"name,omitempty"`
	CPU    float64 `json:"cpu_s"`      // utime+stime since the process started
	HWMKiB int64   `json:"vm_hwm_kib"` // peak RSS (VmHWM)
	RSSKiB int64   `json:"vm_rss_kib"` // RSS now (VmRSS)
	Err    string  `json:"err,omitempty"`
}

// readProc reads /proc/PID/stat (fields 14, 15: utime, stime) and
// /proc/PID/status (VmHWM, VmRSS).
func readProc(pid int) procSample {
	s := procSample{PID: pid}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		s.Err = err.Error()
		return s
	}
	// The command name is in parentheses and may hold spaces: split after
	// the last ')'.
	if i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')'); i >= 0 && j > i {
		s.Name = string(b[i+1 : j])
		f := strings.Fields(string(b[j+1:]))
		// f[0] is field 3 (state): utime is field 14 → f[11], stime f[12].
		if len(f) > 12 {
			ut, _ := strconv.ParseUint(f[11], 10, 64)
			st, _ := strconv.ParseUint(f[12], 10, 64)
			s.CPU = float64(ut+st) / clockTicks
		}
	}
	st, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		s.Err = err.Error()
		return s
	}
	defer st.Close()
	sc := bufio.NewScanner(st)
	for sc.Scan() {
		line := sc.Text()
		for _, f := range []struct {
			name string
			dst  *int64
		}{{"VmHWM:", &s.HWMKiB}, {"VmRSS:", &s.RSSKiB}} {
			if rest, ok := strings.CutPrefix(line, f.name); ok {
				if fs := strings.Fields(rest); len(fs) > 0 {
					*f.dst, _ = strconv.ParseInt(fs[0], 10, 64)
				}
			}
		}
	}
	return s
}

// loadAvg is /proc/loadavg's first three numbers.
func loadAvg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	var out []float64
	for _, f := range strings.Fields(string(b))[:3] {
		v, _ := strconv.ParseFloat(f, 64)
		out = append(out, v)
	}
	return out
}
