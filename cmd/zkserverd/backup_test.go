package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/acl"
	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
	"github.com/zkserverd/zkserverd/server/servertest"
)

// runCLI runs the command line args and returns its output and error.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCommand(&out, &out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestBackupRestoreCommands runs backup and restore against a running
// server in both formats: the backup file decodes, a restore puts the
// tree back, a damaged file is refused before anything is sent, and
// credentials of an unknown scheme are refused by the server.
func TestBackupRestoreCommands(t *testing.T) {
	cfg := testutil.Config(t.TempDir())
	cfg.SuperDigest = acl.Digest("super:secret")
	cfg.Extra["admin.rateLimiterIntervalInMS"] = "0"
	o := ops.New(ops.Options{})
	srv := servertest.Start(t, server.Options{Config: cfg, Operator: o})
	url := "http://" + o.AdminAddr().String() + "/commands"
	c, _ := testutil.Connect(t, srv.Addr().String(), 10*time.Second)
	if _, err := c.Create("/kept", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, format := range []string{"zkserverd", "zookeeper"} {
		t.Run(format, func(t *testing.T) {
			file := filepath.Join(dir, "backup-"+format)
			out, err := runCLI(t, "backup", "--admin-url", url, "--auth", "digest super:secret", "--format", format, "-o", file)
			if err != nil || !strings.Contains(out, "backup written: "+file) {
				t.Fatalf("backup: %v\n%s", err, out)
			}
			if _, err := c.Set("/kept", []byte("changed"), -1); err != nil {
				t.Fatal(err)
			}
			t.Setenv(adminAuthEnv, "digest super:secret")
			out, err = runCLI(t, "restore", "--admin-url", url, file)
			if err != nil || !strings.Contains(out, "restored "+file) {
				t.Fatalf("restore: %v\n%s", err, out)
			}
			testutil.Eventually(t, 10*time.Second, "the backup's data is back", func() bool {
				data, _, err := c.Get("/kept")
				return err == nil && string(data) == "v1"
			})
		})
	}
	raw, err := os.ReadFile(filepath.Join(dir, "backup-zkserverd"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "truncated")
	if err := os.WriteFile(bad, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"truncated file", []string{"restore", "--admin-url", url, "--auth", "digest super:secret", bad}, "nothing was sent"},
		{"unknown auth scheme", []string{"restore", "--admin-url", url, "--auth", "nosuch x", filepath.Join(dir, "backup-zkserverd")}, "401"},
		{"no credentials", []string{"backup", "--admin-url", url, "-o", filepath.Join(dir, "x")}, "need credentials"},
		{"unknown format", []string{"backup", "--admin-url", url, "--auth", "digest super:secret", "--format", "xml"}, "unknown --format"},
	}
	t.Setenv(adminAuthEnv, "")
	for _, tc := range cases {
		out, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\n%s, want an error with %q", tc.name, err, out, tc.want)
		}
	}
}

// TestLeaderAdminURL: a follower's answer is followed to the leader's
// host at the same port and path; an unknown leader is not.
func TestLeaderAdminURL(t *testing.T) {
	cfg := conf.Config{Servers: []conf.Server{{ID: 1, Host: "10.0.0.1"}, {ID: 2, Host: "zk2.example"}}}
	cases := []struct {
		base string
		id   int64
		want string
		ok   bool
	}{
		{"http://127.0.0.1:8080/commands", 2, "http://zk2.example:8080/commands", true},
		{"http://[::1]:9000/zk/cmds", 1, "http://10.0.0.1:9000/zk/cmds", true},
		{"http://127.0.0.1:8080/commands", 3, "", false},
		{"http://127.0.0.1:8080/commands", 0, "", false},
		{"127.0.0.1:8080/commands", 1, "", false},
	}
	for _, tc := range cases {
		got, ok := leaderAdminURL(tc.base, cfg, tc.id)
		if got != tc.want || ok != tc.ok {
			t.Errorf("leaderAdminURL(%q, %d) = %q %v, want %q %v", tc.base, tc.id, got, ok, tc.want, tc.ok)
		}
	}
}
