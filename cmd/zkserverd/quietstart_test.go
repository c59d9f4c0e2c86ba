package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/internal/testutil"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStandaloneStartIsQuiet: a standalone server started on a fresh data
// directory, as README's first command does, and restarted on it, logs no
// warning and no error from its start to its stop (raft's self-election used to warn
// "heartbeat timeout reached, starting election" at every start).
func TestStandaloneStartIsQuiet(t *testing.T) {
	for _, v := range []string{"ZOO_DATA_DIR", "ZOO_SERVERS", "ZOO_MY_ID", "ZOO_CFG_EXTRA", "SERVER_JVMFLAGS", "JVMFLAGS"} {
		t.Setenv(v, "")
	}
	tests := []struct {
		name  string
		start func(dir string) []string // the command line; dir is fresh
		// segment is the size of the log's segment files.
		segment int64
	}{
		{"flags", func(dir string) []string {
			return []string{"--data-dir", filepath.Join(dir, "data"), "--client-port", strconv.Itoa(freePort(t))}
		}, 64 << 20},
		{"zoo.cfg", func(dir string) []string {
			path := filepath.Join(dir, "zoo.cfg")
			cfg := "tickTime=2000\ndataDir=" + filepath.Join(dir, "data") + "\nclientPort=" + strconv.Itoa(freePort(t)) +
				"\nclientPortAddress=127.0.0.1\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=" + strconv.Itoa(freePort(t)) +
				"\nwal.segmentSizeBytes=1048576\n"
			if err := writeFile(path, cfg); err != nil {
				t.Fatal(err)
			}
			return []string{"--config", path}
		}, 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			args := tc.start(dir)
			var out syncBuffer
			logger, err := newLogger(&out, "info", "text")
			if err != nil {
				t.Fatal(err)
			}
			cmd := newRootCommand(&bytes.Buffer{}, &bytes.Buffer{})
			if err := cmd.ParseFlags(args); err != nil {
				t.Fatal(err)
			}
			f := runFlags{}
			f.config, _ = cmd.Flags().GetString("config")
			f.dataDir, _ = cmd.Flags().GetString("data-dir")
			f.clientPort, _ = cmd.Flags().GetInt("client-port")
			if f.config == "" {
				// The defaults' AdminServer port (8080) may be taken here.
				t.Setenv("JVMFLAGS", "-Dzookeeper.admin.enableServer=false")
			}
			cfg, err := loadConfig(cmd, f, logger)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ForceSync = false
			// The first start on a fresh directory, then a restart on it.
			for range 2 {
				srv, err := startServer(context.Background(), cfg, logger, nil)
				if err != nil {
					t.Fatal(err)
				}
				testutil.Eventually(t, 10*time.Second, "the server serves", srv.Serving)
				if err := srv.Close(); err != nil {
					t.Fatal(err)
				}
			}
			var bad []string
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
					bad = append(bad, l)
				}
			}
			if len(bad) > 0 {
				t.Fatalf("a standalone start logged %d warnings or errors:\n%s", len(bad), strings.Join(bad, "\n"))
			}
			segs, _ := filepath.Glob(filepath.Join(dir, "data", "version-2", "raft", "wal", "*.wal"))
			if len(segs) == 0 {
				t.Fatalf("no log segment under %s", dir)
			}
			if info, err := os.Stat(segs[0]); err != nil || info.Size() != tc.segment {
				t.Fatalf("log segment %s: %v, %v; want %d bytes", segs[0], info, err, tc.segment)
			}
			if !strings.Contains(out.String(), "level=INFO") {
				t.Fatalf("nothing logged at info: the check saw no output:\n%s", out.String())
			}
		})
	}
}
