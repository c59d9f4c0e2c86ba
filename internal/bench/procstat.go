package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ErrProcFormat is wrapped by the /proc parsers on input they do not
// understand.
var ErrProcFormat = errors.New("bench: unexpected /proc format")

// userHZ is the unit of utime and stime in /proc/<pid>/stat. Linux fixes
// USER_HZ at 100 on every architecture Go supports, whatever CONFIG_HZ is.
const userHZ = 100

// ProcSample is what a run reads about a server process.
type ProcSample struct {
	// CPU is user plus system time consumed so far.
	CPU time.Duration
	// RSS and HWM are the resident set size now and at its peak, in bytes.
	RSS int64
	HWM int64
}

// Add returns the sum of two samples (for the members of an ensemble).
func (s ProcSample) Add(o ProcSample) ProcSample {
	return ProcSample{CPU: s.CPU + o.CPU, RSS: s.RSS + o.RSS, HWM: s.HWM + o.HWM}
}

// ReadProc samples process pid under procRoot (normally "/proc").
func ReadProc(procRoot string, pid int) (ProcSample, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return ProcSample{}, fmt.Errorf("bench: read process stat: %w", err)
	}
	cpu, err := ParseStatCPU(stat)
	if err != nil {
		return ProcSample{}, fmt.Errorf("bench: pid %d: %w", pid, err)
	}
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return ProcSample{}, fmt.Errorf("bench: read process status: %w", err)
	}
	rss, hwm, err := ParseStatusMemory(status)
	if err != nil {
		return ProcSample{}, fmt.Errorf("bench: pid %d: %w", pid, err)
	}
	return ProcSample{CPU: cpu, RSS: rss, HWM: hwm}, nil
}

// ReadProcs samples several processes and returns their sum.
func ReadProcs(procRoot string, pids []int) (ProcSample, error) {
	var total ProcSample
	for _, pid := range pids {
		s, err := ReadProc(procRoot, pid)
		if err != nil {
			return ProcSample{}, err
		}
		total = total.Add(s)
	}
	return total, nil
}

// ParseStatCPU returns utime+stime from the contents of /proc/<pid>/stat.
// The command name (field 2) is in parentheses and may itself contain
// spaces and parentheses, so fields are counted from the last ')'.
func ParseStatCPU(stat []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("%w: stat has no command name", ErrProcFormat)
	}
	// After ")": state(3) ppid(4) pgrp(5) session(6) tty(7) tpgid(8)
	// flags(9) minflt(10) cminflt(11) majflt(12) cmajflt(13) utime(14)
	// stime(15).
	fields := bytes.Fields(stat[end+1:])
	const utimeAt, stimeAt = 14 - 3, 15 - 3
	if len(fields) <= stimeAt {
		return 0, fmt.Errorf("%w: stat has %d fields after the command name", ErrProcFormat, len(fields))
	}
	var ticks uint64
	for _, i := range []int{utimeAt, stimeAt} {
		v, err := strconv.ParseUint(string(fields[i]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: stat field %d: %v", ErrProcFormat, i+3, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}

// ParseStatusMemory returns VmRSS and VmHWM in bytes from the contents of
// /proc/<pid>/status. VmRSS is required; VmHWM is 0 when absent.
func ParseStatusMemory(status []byte) (rss, hwm int64, err error) {
	found := false
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, val, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(key) {
		case "VmRSS":
			dst, found = &rss, true
		case "VmHWM":
			dst = &hwm
		default:
			continue
		}
		if *dst, err = parseKB(val); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", key, err)
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("%w: status has no VmRSS line", ErrProcFormat)
	}
	return rss, hwm, nil
}

// parseKB reads a status value such as "  123456 kB" into bytes.
func parseKB(val []byte) (int64, error) {
	f := bytes.Fields(val)
	if len(f) != 2 || string(f[1]) != "kB" {
		return 0, fmt.Errorf("%w: %q is not a kB amount", ErrProcFormat, bytes.TrimSpace(val))
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %q is not a kB amount", ErrProcFormat, f[0])
	}
	return n << 10, nil
}
