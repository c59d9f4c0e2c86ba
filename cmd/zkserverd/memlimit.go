package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"path"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/zkserverd/zkserverd/conf"
)

// The process's memory limit (docs/operations.md, "Memory").
//
// The Go runtime's soft limit (GOMEMLIMIT) decides how hard the garbage
// collector works to stay under a size; the server's refusal of growing
// writes (server/memlimit.go) decides when the tree may grow no more. Both
// come from one limit, the first found of:
//
//  1. GOMEMLIMIT in the environment: the runtime has applied it already and
//     it is left alone (the operator's word wins);
//  2. memory.limitBytes in zoo.cfg: the soft limit is set to it;
//  3. the memory limit of the process's cgroup (v2 memory.max, v1
//     memory.limit_in_bytes, the smallest along the cgroup's ancestors):
//     the soft limit is set to cgroupShare of it, leaving the rest for
//     what the kernel counts against the cgroup beyond the Go runtime's
//     memory (thread stacks, page cache of the data files) and for the
//     runtime's overshoot of a soft limit.
//
// With none of them the runtime keeps its default (no soft limit).

// cgroupShare is the part of a cgroup's memory limit given to the Go
// runtime as its soft limit. The soft limit is soft: the resident memory
// of a server filled to its refusals and then deleting in bulk peaked at
// 1.08 times it (docs/operations.md, "Memory"), so 0.85 keeps that peak
// near 0.92 of the cgroup's limit.
const cgroupShare = 0.85

// noCgroupLimit is the smallest value a cgroup v1 memory.limit_in_bytes
// takes for "no limit" (the kernel writes the largest page-aligned int64).
const noCgroupLimit = 1 << 62

// memoryLimit is the process's memory limit and where it came from.
type memoryLimit struct {
	// bytes is the limit; 0 when there is none.
	bytes int64
	// soft is the Go runtime's soft limit to set; 0 leaves the runtime's.
	soft int64
	// source names where bytes came from, for the start log line.
	source string
}

// chooseMemoryLimit finds the process's memory limit from the environment
// (getenv), the configuration and the cgroup files under root (the
// machine's "/" in production).
func chooseMemoryLimit(cfg conf.Config, getenv func(string) string, root fs.FS) (memoryLimit, error) {
	if v := getenv("GOMEMLIMIT"); v != "" && v != "off" {
		return memoryLimit{bytes: debug.SetMemoryLimit(-1), source: "GOMEMLIMIT=" + v}, nil
	}
	if cfg.MemoryLimitBytes > 0 {
		return memoryLimit{bytes: cfg.MemoryLimitBytes, soft: cfg.MemoryLimitBytes, source: "memory.limitBytes"}, nil
	}
	limit, file, err := cgroupMemoryLimit(root)
	if err != nil || limit == 0 {
		return memoryLimit{source: "none"}, err
	}
	soft := int64(float64(limit) * cgroupShare)
	return memoryLimit{bytes: soft, soft: soft, source: fmt.Sprintf("cgroup %s (%d bytes) x %.2f", file, limit, cgroupShare)}, nil
}

// applyMemoryLimit sets the Go runtime's soft limit as chooseMemoryLimit
// finds it and logs the effective limit and its source. A cgroup that
// cannot be read is logged and leaves the runtime's default.
func applyMemoryLimit(cfg conf.Config, getenv func(string) string, root fs.FS, logger *slog.Logger) {
	m, err := chooseMemoryLimit(cfg, getenv, root)
	if err != nil {
		logger.Warn("cannot read the cgroup memory limit; the Go runtime keeps its default", "err", err)
	}
	if m.soft > 0 {
		debug.SetMemoryLimit(m.soft)
	}
	soft := debug.SetMemoryLimit(-1)
	if soft == math.MaxInt64 {
		logger.Info("memory limit", "limit", "none", "source", m.source)
		return
	}
	attrs := []any{"limit_bytes", m.bytes, "source", m.source, "go_soft_limit_bytes", soft}
	if cfg.MemoryLimitBytes > 0 && m.bytes != cfg.MemoryLimitBytes {
		attrs = append(attrs, "note", "GOMEMLIMIT sets the Go soft limit; memory.limitBytes still sets where writes are refused")
	}
	logger.Info("memory limit", attrs...)
}

// cgroupMemoryLimit returns the memory limit of the process's cgroup read
// under root, the smallest set on the cgroup or any of its ancestors, and
// the file it was read from; 0 when none is set (or there is no cgroup
// file system).
func cgroupMemoryLimit(root fs.FS) (int64, string, error) {
	self, err := fs.ReadFile(root, "proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		self = nil // no /proc: look at the root cgroups only
	} else if err != nil {
		return 0, "", fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	v2, v1 := cgroupPaths(self)
	if limit, file, err := smallestLimit(root, "sys/fs/cgroup", v2, "memory.max"); err != nil || limit > 0 {
		return limit, file, err
	}
	return smallestLimit(root, "sys/fs/cgroup/memory", v1, "memory.limit_in_bytes")
}

// cgroupPaths returns the process's cgroup v2 path and its cgroup v1
// memory controller path from the contents of /proc/self/cgroup ("/" for
// any not listed: a container sees its own cgroup as the root).
func cgroupPaths(self []byte) (v2, v1 string) {
	v2, v1 = "/", "/"
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-id:controller-list:path
		id, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(p, "/") {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			v2 = p
		case cgroupHasController(controllers, "memory"):
			v1 = p
		}
	}
	return v2, v1
}

// cgroupHasController reports whether a v1 controller list names want.
func cgroupHasController(list, want string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == want {
			return true
		}
	}
	return false
}

// smallestLimit reads name in the cgroup directory mount+cgroup and in
// each of its ancestors up to mount, and returns the smallest limit set
// and the file holding it (0 when none is). A missing file is no limit.
func smallestLimit(root fs.FS, mount, cgroup, name string) (int64, string, error) {
	var best int64
	var bestFile string
	dir := path.Clean("/" + cgroup)
	for range strings.Count(dir, "/") + 1 { // the cgroup, its ancestors, the mount itself
		rel := strings.TrimSuffix(path.Join(mount, dir), "/")
		file := path.Join(rel, name)
		data, err := fs.ReadFile(root, file)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return 0, "", fmt.Errorf("read /%s: %w", file, err)
		default:
			limit, err := parseCgroupLimit(data)
			if err != nil {
				return 0, "", fmt.Errorf("read /%s: %w", file, err)
			}
			if limit > 0 && (best == 0 || limit < best) {
				best, bestFile = limit, "/"+file
			}
		}
		if dir == "/" {
			break
		}
		dir = path.Dir(dir)
	}
	return best, bestFile, nil
}

// parseCgroupLimit parses a memory.max or memory.limit_in_bytes value:
// "max" (v2) or a value of at least noCgroupLimit (v1) mean no limit (0).
func parseCgroupLimit(data []byte) (int64, error) {
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memory limit %q is not a number of bytes", s)
	}
	if n >= noCgroupLimit {
		return 0, nil
	}
	return int64(n), nil
}
