package main

// Where the server logs, and at which levels.
//
// Logs go to standard error unless --log-file (or ZOO_LOG_DIR, as the
// official ZooKeeper image sets it) names a file; that file is rotated by
// size (gopkg.in/natefinch/lumberjack.v2) and keeps a bounded number of
// old files. --log-level takes a default level and, after it, a level per
// component: "info,raft=warn" logs raft's lines (component=raft) from
// warnings up and everything else from info up.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/zkserverd/zkserverd/conf"
)

// logFileName is the file a ZOO_LOG_DIR directory receives.
const logFileName = "zkserverd.log"

// logOutputFlags are the flags of the log file.
type logOutputFlags struct {
	file      string // --log-file
	maxSizeMB int    // --log-max-size
	maxFiles  int    // --log-max-files
}

// addLogFlags defines the log file's flags.
func addLogFlags(fl *pflag.FlagSet, f *logOutputFlags) {
	fl.StringVar(&f.file, "log-file", "", "log to this file instead of standard error, rotated by size (default: $ZOO_LOG_DIR/"+logFileName+" when ZOO_LOG_DIR is set)")
	fl.IntVar(&f.maxSizeMB, "log-max-size", 100, "with a log file: rotate it when it reaches this many MiB")
	fl.IntVar(&f.maxFiles, "log-max-files", 10, "with a log file: how many rotated files to keep besides the current one")
}

// logFile returns the file to log to: --log-file, else ZOO_LOG_DIR's
// file, else "" (standard error).
func (f logOutputFlags) logFile(getenv func(string) string) string {
	if f.file != "" {
		return f.file
	}
	if dir := getenv(conf.EnvLogDir); dir != "" {
		return filepath.Join(dir, logFileName)
	}
	return ""
}

// open returns where logs go, and what to close when the server stops:
// stderr, or the rotated log file.
func (f logOutputFlags) open(stderr io.Writer, getenv func(string) string) (io.Writer, func() error, error) {
	path := f.logFile(getenv)
	if path == "" {
		return stderr, func() error { return nil }, nil
	}
	if f.maxSizeMB < 1 {
		return nil, nil, fmt.Errorf("--log-max-size: %d must be at least 1 (MiB)", f.maxSizeMB)
	}
	if f.maxFiles < 1 {
		return nil, nil, fmt.Errorf("--log-max-files: %d must be at least 1", f.maxFiles)
	}
	lj := &lumberjack.Logger{Filename: path, MaxSize: f.maxSizeMB, MaxBackups: f.maxFiles}
	// Open the file now: a path that cannot be written fails the start
	// with its name, not the first line logged.
	if _, err := lj.Write(nil); err != nil {
		return nil, nil, fmt.Errorf("--log-file: open %s: %w", path, err)
	}
	return lj, lj.Close, nil
}

// parseLevels parses --log-level: a level, optionally followed by
// component=level pairs, separated by commas ("info,raft=warn").
func parseLevels(spec string) (slog.Level, map[string]slog.Level, error) {
	var def slog.Level
	levels := make(map[string]slog.Level)
	parts := strings.Split(spec, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		comp, lv, pair := strings.Cut(p, "=")
		if !pair {
			if i != 0 {
				return 0, nil, fmt.Errorf("--log-level: %q: only the first entry may be a level without a component", p)
			}
			lv = p
		}
		var l slog.Level
		if err := l.UnmarshalText([]byte(lv)); err != nil {
			return 0, nil, fmt.Errorf("--log-level: %q: %w", p, err)
		}
		if !pair {
			def = l
			continue
		}
		if comp == "" {
			return 0, nil, fmt.Errorf("--log-level: %q names no component", p)
		}
		levels[comp] = l
	}
	return def, levels, nil
}

// componentHandler passes a record on when its level reaches the level of
// the logger's component (the "component" attribute a logger was given
// with With), or the default level for a logger without one or with a
// component that has no level of its own. levels is shared and never
// changed after newLogger.
type componentHandler struct {
	next   slog.Handler
	levels map[string]slog.Level
	level  slog.Level // this logger's
}

var _ slog.Handler = (*componentHandler)(nil)

// Enabled implements slog.Handler.
func (h *componentHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.next.Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (h *componentHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

// WithAttrs implements slog.Handler: a component attribute selects the
// component's level.
func (h *componentHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	nh := &componentHandler{next: h.next.WithAttrs(attrs), levels: h.levels, level: h.level}
	for _, a := range attrs {
		if a.Key != "component" {
			continue
		}
		if l, ok := h.levels[a.Value.String()]; ok {
			nh.level = l
		}
	}
	return nh
}

// WithGroup implements slog.Handler.
func (h *componentHandler) WithGroup(name string) slog.Handler {
	return &componentHandler{next: h.next.WithGroup(name), levels: h.levels, level: h.level}
}

// newLogger returns the server's logger writing to w: level is --log-level
// (parseLevels), format text or json.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	def, levels, err := parseLevels(level)
	if err != nil {
		return nil, err
	}
	lowest := def
	for _, l := range levels {
		lowest = min(lowest, l)
	}
	opts := &slog.HandlerOptions{Level: lowest}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format: %q is neither text nor json", format)
	}
	if len(levels) == 0 {
		return slog.New(h), nil
	}
	return slog.New(&componentHandler{next: h, levels: levels, level: def}), nil
}
