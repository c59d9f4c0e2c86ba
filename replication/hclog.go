package replication

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// slogHC adapts *slog.Logger to the hclog.Logger that hashicorp/raft
// requires, so raft's lines reach the same structured output as ours.
// Methods not overridden come from a null logger.
type slogHC struct {
	hclog.Logger
	l *slog.Logger
}

func newHCLogger(l *slog.Logger) hclog.Logger {
	return &slogHC{Logger: hclog.NewNullLogger(), l: l.With("component", "raft")}
}

func (h *slogHC) log(level slog.Level, msg string, args []interface{}) {
	if !h.l.Enabled(context.Background(), level) {
		return
	}
	for i, a := range args {
		// hclog.Fmt values are deferred Sprintf calls.
		if f, ok := a.(hclog.Format); ok && len(f) > 0 {
			if layout, ok := f[0].(string); ok {
				args[i] = fmt.Sprintf(layout, f[1:]...)
			}
		}
	}
	h.l.Log(context.Background(), level, msg, args...)
}

func (h *slogHC) Log(level hclog.Level, msg string, args ...interface{}) {
	switch {
	case level >= hclog.Error:
		h.log(slog.LevelError, msg, args)
	case level == hclog.Warn:
		h.log(slog.LevelWarn, msg, args)
	case level == hclog.Info:
		h.log(slog.LevelInfo, msg, args)
	default:
		h.log(slog.LevelDebug, msg, args)
	}
}

func (h *slogHC) Trace(msg string, args ...interface{}) { h.log(slog.LevelDebug-4, msg, args) }
func (h *slogHC) Debug(msg string, args ...interface{}) { h.log(slog.LevelDebug, msg, args) }
func (h *slogHC) Info(msg string, args ...interface{})  { h.log(slog.LevelInfo, msg, args) }
func (h *slogHC) Warn(msg string, args ...interface{})  { h.log(slog.LevelWarn, msg, args) }
func (h *slogHC) Error(msg string, args ...interface{}) { h.log(slog.LevelError, msg, args) }

func (h *slogHC) IsTrace() bool { return h.l.Enabled(context.Background(), slog.LevelDebug-4) }
func (h *slogHC) IsDebug() bool { return h.l.Enabled(context.Background(), slog.LevelDebug) }
func (h *slogHC) IsInfo() bool  { return h.l.Enabled(context.Background(), slog.LevelInfo) }
func (h *slogHC) IsWarn() bool  { return h.l.Enabled(context.Background(), slog.LevelWarn) }
func (h *slogHC) IsError() bool { return h.l.Enabled(context.Background(), slog.LevelError) }

func (h *slogHC) With(args ...interface{}) hclog.Logger {
	return &slogHC{Logger: h.Logger, l: h.l.With(args...)}
}

func (h *slogHC) Named(name string) hclog.Logger {
	return &slogHC{Logger: h.Logger, l: h.l.With("name", name)}
}

func (h *slogHC) ResetNamed(name string) hclog.Logger { return h.Named(name) }
