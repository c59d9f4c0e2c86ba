package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/server/ops"
)

// backup and restore run the AdminServer's snapshot and restore commands
// (server/ops/backup.go) against a running member, as ZooKeeper 3.9's
// operators do with curl. docs/operations.md, "Backup and restore".

// adminAuthEnv holds the Authorization value when --auth is not given,
// so that no password need appear in a process list.
const adminAuthEnv = "ZKSERVERD_ADMIN_AUTH"

// adminTimeout bounds one backup or restore request.
const adminTimeout = 30 * time.Minute

// adminFlags are the flags backup and restore share.
type adminFlags struct {
	run      runFlags
	adminURL string
	auth     string
}

func addAdminFlags(cmd *cobra.Command, f *adminFlags) {
	addConfigFlags(cmd, &f.run)
	fl := cmd.Flags()
	fl.StringVar(&f.adminURL, "admin-url", "", "the member's AdminServer command URL (default: from the configuration, http://127.0.0.1:<admin.serverPort><admin.commandURL>)")
	fl.StringVar(&f.auth, "auth", "", "Authorization for the command, \"<scheme> <credentials>\" such as \"digest admin:secret\" (default: $"+adminAuthEnv+")")
}

// target resolves the command URL and the Authorization value.
func (f *adminFlags) target(cmd *cobra.Command) (base string, cfg conf.Config, auth string, err error) {
	cfg, err = loadConfig(cmd, f.run, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", cfg, "", err
	}
	auth = f.auth
	if auth == "" {
		auth = os.Getenv(adminAuthEnv)
	}
	if auth == "" {
		return "", cfg, "", fmt.Errorf("the snapshot and restore commands need credentials: pass --auth \"digest user:password\" or set %s", adminAuthEnv)
	}
	base = f.adminURL
	if base == "" {
		if !cfg.AdminEnableServer {
			return "", cfg, "", errors.New("the configuration turns the AdminServer off (admin.enableServer=false); pass --admin-url")
		}
		host := cfg.AdminServerAddress
		base = "http://" + localAddr(net.JoinHostPort(host, strconv.Itoa(cfg.AdminServerPort))) + "/" + strings.Trim(cfg.AdminCommandURL, "/")
	}
	return strings.TrimRight(base, "/"), cfg, auth, nil
}

// newBackupCommand streams a backup of a running member to a file.
func newBackupCommand() *cobra.Command {
	var f adminFlags
	var output, format string
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Write a consistent snapshot of a running member to a file (AdminServer snapshot command)",
		Long: "backup asks a running member's AdminServer for a snapshot (GET <admin-url>/snapshot),\n" +
			"checks it, and writes it to --output (default: the name the member offers, in the\n" +
			"current directory). --format zookeeper writes Apache ZooKeeper's snapshot format,\n" +
			"named snapshot.<zxid> so that a ZooKeeper server loads it from version-2/.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base, _, auth, err := f.target(cmd)
			if err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			path, size, zxid, err := runBackup(base, auth, format, output)
			if err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backup written: %s (%d bytes, %s format, last zxid %s)\n", path, size, format, zxid)
			return nil
		},
	}
	addAdminFlags(cmd, &f)
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write (default: the name the member offers)")
	cmd.Flags().StringVar(&format, "format", "zkserverd", "snapshot format: zkserverd or zookeeper")
	return cmd
}

// runBackup downloads a backup to a temporary file beside its
// destination, checks its length and that it decodes whole, and renames
// it into place. It returns the path, the size and the last zxid.
func runBackup(base, auth, format, output string) (string, int64, string, error) {
	if format != "zkserverd" && format != "zookeeper" {
		return "", 0, "", fmt.Errorf("unknown --format %q: zkserverd or zookeeper", format)
	}
	req, err := http.NewRequest(http.MethodGet, base+"/snapshot?streaming=true&format="+format, nil)
	if err != nil {
		return "", 0, "", fmt.Errorf("admin URL %s: %w", base, err)
	}
	req.Header.Set("Authorization", auth)
	resp, err := (&http.Client{Timeout: adminTimeout}).Do(req)
	if err != nil {
		return "", 0, "", fmt.Errorf("snapshot command: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/octet-stream" {
		return "", 0, "", commandError("snapshot", resp)
	}
	if output == "" {
		_, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
		output = filepath.Base(params["filename"])
		if output == "." || output == "/" || output == "" {
			output = "zkserverd-backup"
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(output), filepath.Base(output)+".part-*")
	if err != nil {
		return "", 0, "", fmt.Errorf("create the backup file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there to remove
	n, err := io.Copy(tmp, resp.Body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, "", fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if want := resp.Header.Get("snapshot_size"); want != strconv.FormatInt(n, 10) {
		return "", 0, "", fmt.Errorf("the member announced %s bytes and sent %d: the backup is incomplete and was not kept", want, n)
	}
	if err := checkBackupFile(tmp.Name()); err != nil {
		return "", 0, "", fmt.Errorf("the downloaded backup does not decode and was not kept: %w", err)
	}
	if err := os.Rename(tmp.Name(), output); err != nil {
		return "", 0, "", fmt.Errorf("keep the backup: %w", err)
	}
	return output, n, resp.Header.Get("last_zxid"), nil
}

// checkBackupFile decodes a backup file whole.
func checkBackupFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, err = ops.DecodeBackup(f)
	return err
}

// newRestoreCommand loads a backup file into a running ensemble.
func newRestoreCommand() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Replace a running ensemble's state with a backup (AdminServer restore command)",
		Long: "restore checks a backup file (zkserverd's or Apache ZooKeeper's snapshot format)\n" +
			"and posts it to a running member's AdminServer (POST <admin-url>/restore), which\n" +
			"installs it through the replicated log on every member. Only the leader restores:\n" +
			"when the member named is a follower, restore goes to the leader's AdminServer at\n" +
			"the host of its server line and the same admin port. Every znode is replaced;\n" +
			"sessions not in the backup end.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			base, cfg, auth, err := f.target(cmd)
			if err != nil {
				return fmt.Errorf("restore: %w", err)
			}
			body, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("restore: %w", err)
			}
			if _, _, err := ops.DecodeBackup(bytes.NewReader(body)); err != nil {
				return fmt.Errorf("restore: %s is refused, nothing was sent: %w", args[0], err)
			}
			reply, err := runRestore(base, auth, body, cfg)
			if err != nil {
				return fmt.Errorf("restore: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s: %v nodes, %v sessions, last zxid %v\n",
				args[0], reply["node_count"], reply["session_count"], reply["last_zxid"])
			return nil
		},
	}
	addAdminFlags(cmd, &f)
	return cmd
}

// runRestore posts the backup and, when the member is a follower that
// names the leader, posts it once more to the leader's AdminServer.
func runRestore(base, auth string, body []byte, cfg conf.Config) (map[string]any, error) {
	reply, status, err := postRestore(base, auth, body)
	if err != nil || status != http.StatusServiceUnavailable {
		return reply, err
	}
	leader, _ := reply["leader_id"].(json.Number)
	id, _ := leader.Int64()
	next, ok := leaderAdminURL(base, cfg, id)
	if !ok {
		return nil, fmt.Errorf("restore command: %v", reply["error"])
	}
	reply, status, err = postRestore(next, auth, body)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("restore command at %s: %v", next, reply["error"])
	}
	return reply, err
}

// postRestore posts one restore; a 503 (not the leader) is returned
// with its reply for the caller to follow, any other failure as an error.
func postRestore(base, auth string, body []byte) (map[string]any, int, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/restore", bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("admin URL %s: %w", base, err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := (&http.Client{Timeout: adminTimeout}).Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("restore command: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusServiceUnavailable {
		reply, err := decodeReply(resp.Body)
		if err == nil && resp.StatusCode == http.StatusServiceUnavailable && reply["leader_id"] == nil {
			err = fmt.Errorf("restore command: %v", reply["error"])
		}
		return reply, resp.StatusCode, err
	}
	return nil, resp.StatusCode, commandError("restore", resp)
}

// leaderAdminURL is the command URL of member id's AdminServer: base with
// its host replaced by that of the member's server line.
func leaderAdminURL(base string, cfg conf.Config, id int64) (string, bool) {
	for _, m := range cfg.Servers {
		if m.ID == id && id != 0 {
			scheme, rest, ok := strings.Cut(base, "://")
			if !ok {
				return "", false
			}
			hostPort, path, _ := strings.Cut(rest, "/")
			_, port, err := net.SplitHostPort(hostPort)
			if err != nil {
				return "", false
			}
			return scheme + "://" + net.JoinHostPort(m.Host, port) + "/" + path, true
		}
	}
	return "", false
}

// decodeReply parses a command's JSON reply, numbers kept exact.
func decodeReply(r io.Reader) (map[string]any, error) {
	d := json.NewDecoder(r)
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("undecodable reply: %w", err)
	}
	return v, nil
}

// commandError describes a failed command from its status and reply.
func commandError(command string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(b))
	if v, err := decodeReply(bytes.NewReader(b)); err == nil && v["error"] != nil {
		msg = fmt.Sprint(v["error"])
	}
	hint := ""
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = " (the credentials must hold every permission on the ACL of /)"
	case http.StatusTooManyRequests:
		hint = " (wait for admin.rateLimiterIntervalInMS to pass)"
	}
	return fmt.Errorf("%s command: %s: %s%s", command, resp.Status, msg, hint)
}
