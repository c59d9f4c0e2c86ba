package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultHandOffTimeout bounds a stopping leader's hand-off on SIGTERM
// (server.HandOffAndClose); raft gives a transfer up after an election
// timeout, so this is only reached when something else hangs.
const defaultHandOffTimeout = 10 * time.Second

// handOffFlag is the server's flag for the hand-off's bound.
const handOffFlag = "leader-handoff-timeout"

// addHandOffFlag defines --leader-handoff-timeout on the server's command.
func addHandOffFlag(cmd *cobra.Command) {
	cmd.Flags().Duration(handOffFlag, defaultHandOffTimeout,
		"on SIGTERM a leader hands its leadership to another member first, waiting at most this long (0: stop without handing over)")
}

// handOffTimeoutOf reads --leader-handoff-timeout (the default when the
// command has no such flag).
func handOffTimeoutOf(cmd *cobra.Command) time.Duration {
	d, err := cmd.Flags().GetDuration(handOffFlag)
	if err != nil {
		return defaultHandOffTimeout
	}
	return d
}

// transferFlags are transfer-leadership's flags beside the configuration
// flags (addConfigFlags).
type transferFlags struct {
	runFlags
	adminURL string
	target   int64
	auth     string
	timeout  time.Duration
}

// newTransferCommand asks a member's AdminServer to hand its leadership
// over (transfer_leadership, server/ops/handoff.go).
func newTransferCommand() *cobra.Command {
	var f transferFlags
	cmd := &cobra.Command{
		Use:   "transfer-leadership",
		Short: "Ask the leader to hand its leadership to another member (before restarting it)",
		Long: "transfer-leadership sends the AdminServer command transfer_leadership to the member\n" +
			"configured here (--config, the ZOO_* variables or the defaults, as the server reads\n" +
			"them; its admin.serverPort and admin.commandURL) or to --admin-url. That member must\n" +
			"lead; it hands its leadership to --target, or to its most up-to-date follower, and\n" +
			"the command prints the new leader's id. The command needs an identity with every\n" +
			"permission on / (--auth, or ZKSERVERD_ADMIN_AUTH: \"digest user:password\").",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			url := f.adminURL
			if url == "" {
				var err error
				if url, err = adminURL(cmd, f.runFlags); err != nil {
					return err
				}
			}
			if f.auth == "" {
				f.auth = os.Getenv("ZKSERVERD_ADMIN_AUTH")
			}
			leader, err := transferLeadership(url, f.target, f.auth, f.timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "leader: %d\n", leader)
			return nil
		},
	}
	addConfigFlags(cmd, &f.runFlags)
	fl := cmd.Flags()
	fl.StringVar(&f.adminURL, "admin-url", "", "the AdminServer's command URL, e.g. http://host:8080/commands (default: from the configuration)")
	fl.Int64Var(&f.target, "target", 0, "server id of the member to hand leadership to (default: the most up-to-date follower)")
	fl.StringVar(&f.auth, "auth", "", `Authorization for the command, e.g. "digest admin:secret" (default: $ZKSERVERD_ADMIN_AUTH)`)
	fl.DurationVar(&f.timeout, "timeout", 15*time.Second, "how long to wait for the answer")
	return cmd
}

// adminURL is the command URL of the AdminServer the configuration
// resolved from f describes, on this machine.
func adminURL(cmd *cobra.Command, f runFlags) (string, error) {
	cfg, err := loadConfig(cmd, f, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", err
	}
	if !cfg.AdminEnableServer {
		return "", errors.New("transfer-leadership: the AdminServer is disabled (admin.enableServer=false); pass --admin-url")
	}
	if cfg.AdminServerPort == 0 {
		return "", errors.New("transfer-leadership: admin.serverPort is 0 (the server picks a free port); pass --admin-url")
	}
	addr := localAddr(net.JoinHostPort(cfg.AdminServerAddress, strconv.Itoa(cfg.AdminServerPort)))
	return "http://" + addr + "/" + strings.Trim(cfg.AdminCommandURL, "/"), nil
}

// transferLeadership POSTs transfer_leadership to the AdminServer at
// url (the command URL) and returns the new leader's id.
func transferLeadership(url string, target int64, auth string, timeout time.Duration) (int64, error) {
	body := ""
	if target != 0 {
		body = fmt.Sprintf(`{"target": %d}`, target)
	}
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(url, "/")+"/transfer_leadership", strings.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("transfer-leadership: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return 0, fmt.Errorf("transfer-leadership: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("transfer-leadership: read the answer: %w", err)
	}
	var reply struct {
		Leader int64   `json:"leader"`
		Error  *string `json:"error"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return 0, fmt.Errorf("transfer-leadership: HTTP %d, not a command reply: %q", resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	if reply.Error != nil {
		return 0, fmt.Errorf("transfer-leadership: HTTP %d: %s", resp.StatusCode, *reply.Error)
	}
	if resp.StatusCode != http.StatusOK || reply.Leader == 0 {
		return 0, fmt.Errorf("transfer-leadership: HTTP %d: %q", resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	return reply.Leader, nil
}
