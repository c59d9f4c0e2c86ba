package main

import (
	"bytes"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/internal/testutil"
)

func TestParseLevels(t *testing.T) {
	tests := []struct {
		spec    string
		def     slog.Level
		levels  map[string]slog.Level
		wantErr string
	}{
		{"info", slog.LevelInfo, map[string]slog.Level{}, ""},
		{"DEBUG", slog.LevelDebug, map[string]slog.Level{}, ""},
		{"info,raft=warn", slog.LevelInfo, map[string]slog.Level{"raft": slog.LevelWarn}, ""},
		{"warn, raft=error, audit=info", slog.LevelWarn, map[string]slog.Level{"raft": slog.LevelError, "audit": slog.LevelInfo}, ""},
		{"loud", 0, nil, `"loud"`},
		{"info,raft=loud", 0, nil, `"raft=loud"`},
		{"info,warn", 0, nil, "only the first entry"},
		{"info,=warn", 0, nil, "names no component"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			def, levels, err := parseLevels(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "--log-level: ") {
					t.Fatalf("parseLevels(%q) error %v, want one naming --log-level and containing %q", tt.spec, err, tt.wantErr)
				}
				return
			}
			if err != nil || def != tt.def || !maps.Equal(levels, tt.levels) {
				t.Fatalf("parseLevels(%q) = %v, %v, %v; want %v, %v", tt.spec, def, levels, err, tt.def, tt.levels)
			}
		})
	}
}

// TestComponentLevels: each component logs from its own level, lines of
// other loggers from the default level.
func TestComponentLevels(t *testing.T) {
	type line struct {
		component string // "" for none
		level     slog.Level
		logged    bool
	}
	tests := []struct {
		spec  string
		lines []line
	}{
		{"info", []line{{"", slog.LevelInfo, true}, {"", slog.LevelDebug, false}, {"raft", slog.LevelInfo, true}}},
		{"info,raft=warn", []line{
			{"raft", slog.LevelInfo, false}, {"raft", slog.LevelWarn, true},
			{"", slog.LevelInfo, true}, {"audit", slog.LevelInfo, true}}},
		{"warn,audit=info,raft=debug", []line{
			{"", slog.LevelInfo, false}, {"", slog.LevelWarn, true},
			{"audit", slog.LevelInfo, true}, {"audit", slog.LevelDebug, false},
			{"raft", slog.LevelDebug, true}, {"other", slog.LevelInfo, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			for _, format := range []string{"text", "json"} {
				var out bytes.Buffer
				l, err := newLogger(&out, tt.spec, format)
				if err != nil {
					t.Fatal(err)
				}
				for _, ln := range tt.lines {
					out.Reset()
					ll := l
					if ln.component != "" {
						ll = l.With("component", ln.component).WithGroup("g").With("k", 1)
					}
					ll.Log(t.Context(), ln.level, "hello")
					if got := out.Len() > 0; got != ln.logged {
						t.Errorf("%s: component %q at %v logged %v, want %v", format, ln.component, ln.level, got, ln.logged)
					}
				}
			}
		})
	}
}

func TestLogFile(t *testing.T) {
	tests := []struct {
		name string
		f    logOutputFlags
		env  string // ZOO_LOG_DIR
		want string
	}{
		{"stderr", logOutputFlags{}, "", ""},
		{"flag", logOutputFlags{file: "/var/log/zk.log"}, "", "/var/log/zk.log"},
		{"ZOO_LOG_DIR", logOutputFlags{}, "/logs", "/logs/" + logFileName},
		{"the flag wins", logOutputFlags{file: "/var/log/zk.log"}, "/logs", "/var/log/zk.log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "ZOO_LOG_DIR" {
					return tt.env
				}
				return ""
			}
			if got := tt.f.logFile(getenv); got != tt.want {
				t.Fatalf("logFile = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLogFileOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "plain")
	if err := writeFile(notDir, "x"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    logOutputFlags
		want string
	}{
		{"size", logOutputFlags{file: filepath.Join(dir, "a.log"), maxSizeMB: 0, maxFiles: 1}, "--log-max-size: 0 must be at least 1"},
		{"files", logOutputFlags{file: filepath.Join(dir, "a.log"), maxSizeMB: 1, maxFiles: 0}, "--log-max-files: 0 must be at least 1"},
		{"unwritable", logOutputFlags{file: filepath.Join(notDir, "a.log"), maxSizeMB: 1, maxFiles: 1}, "--log-file: open " + filepath.Join(notDir, "a.log")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, closeLog, err := tt.f.open(os.Stderr, func(string) string { return "" })
			if err == nil {
				closeLog()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestLogFileRotates: the log file is rotated at its size and keeps
// the configured number of old files.
func TestLogFileRotates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs") // created at open
	f := logOutputFlags{maxSizeMB: 1, maxFiles: 2}
	out, closeLog, err := f.open(os.Stderr, func(k string) string {
		if k == "ZOO_LOG_DIR" {
			return dir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLogger(out, "info", "text")
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 1000)
	for i := range 4000 { // about 4 MiB: four rotations
		l.Info("filler", "i", i, "pad", pad)
	}
	if err := closeLog(); err != nil {
		t.Fatal(err)
	}
	// Old files beyond the count are removed in the background.
	testutil.Eventually(t, 5*time.Second, "two old files and the current one", func() bool {
		entries, err := os.ReadDir(dir)
		return err == nil && len(entries) == 3
	})
	entries, _ := os.ReadDir(dir)
	current := false
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > 1<<20 {
			t.Errorf("%s has %d bytes, more than the 1 MiB limit", e.Name(), info.Size())
		}
		current = current || e.Name() == logFileName
	}
	if !current {
		t.Errorf("no %s among %v", logFileName, entries)
	}
}
