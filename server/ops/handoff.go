package ops

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/server"
)

// The AdminServer's state-changing commands for rolling restarts, which
// take a POST with a JSON body and an Authorization header, as ZooKeeper
// 3.9's POST commands (snapshot, restore) and 3.10's shed_connections do:
//
//   - shed_connections (shed): close {"percentage": N} percent of this
//     member's client connections (ZooKeeper 3.10's command);
//   - transfer_leadership (leader_transfer): zkserverd's own; a leader
//     hands its leadership to the member {"target": id} names, or to the
//     most up-to-date follower without a body.
//
// Both need an identity with every permission on "/" (ZooKeeper's
// AuthRequest(Perms.ALL, "/")): "Authorization: digest user:password",
// "Authorization: ip", or the super digest. The reply is ZooKeeper's: the
// fields, then "command" and "error", with the HTTP status of the outcome.

// postCommand is one POST command of the AdminServer.
type postCommand struct {
	// names holds the primary name first, then the aliases.
	names []string
	// run handles the request body; it returns the fields, or an HTTP
	// status and error message.
	run func(o *Surfaces, body []byte) (jsonObject, int, string)
}

// maxPostBody bounds the body a POST command reads.
const maxPostBody = 64 << 10

// transferTimeout bounds transfer_leadership's wait for the new leader;
// raft gives a transfer up after an election timeout anyway.
const transferTimeout = 10 * time.Second

// postCommands lists the POST commands.
func postCommands() []postCommand {
	return []postCommand{
		{[]string{"shed_connections", "shed"}, (*Surfaces).adminShedConnections},
		{[]string{"transfer_leadership", "leader_transfer"}, (*Surfaces).adminTransferLeadership},
	}
}

// connectionShedder is the server's side of shed_connections;
// *server.Server implements it (server/shed.go).
type connectionShedder interface {
	ShedConnections(percentage int) (int, error)
}

var (
	_ connectionShedder = (*server.Server)(nil)
	_ adminAuthorizer   = (*server.Server)(nil)
)

// adminRoutes is the AdminServer's handler: the probes /ready and /live
// (probes.go), the POST commands, and every other request through the
// GET commands' handler get.
func (o *Surfaces) adminRoutes(get *adminHandler) http.Handler {
	post := make(map[string]*postCommand)
	for _, c := range postCommands() {
		for _, n := range c.names {
			post[n] = &c
		}
	}
	mux := http.NewServeMux()
	probes := newProbes(o)
	mux.HandleFunc("/ready", probes.serveReady)
	mux.HandleFunc("/live", probes.serveLive)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		name, ok := get.route(r.URL.Path)
		cmd := post[name]
		if !ok || cmd == nil {
			get.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "HTTP method "+r.Method+" is not supported by this URL", http.StatusMethodNotAllowed)
			return
		}
		status, reply := o.runPost(cmd, r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, reply)
	})
	return mux
}

// runPost checks, in ZooKeeper's order, that the server serves and that
// the caller may run the command, then runs it; it returns the status and
// the JSON reply.
func (o *Surfaces) runPost(cmd *postCommand, r *http.Request) (int, string) {
	primary := cmd.names[0]
	fail := func(status int, msg string) (int, string) {
		return status, encodeJSON(jsonObject{{"error", msg}, {"command", primary}})
	}
	if !o.serving() {
		return fail(http.StatusOK, notServingError)
	}
	if status, msg := o.authorize(r); status != http.StatusOK {
		o.log.Warn("AdminServer command refused", "command", primary, "remote", r.RemoteAddr, "reason", msg)
		return fail(status, msg)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPostBody+1))
	if err != nil || len(body) > maxPostBody {
		return fail(http.StatusBadRequest, "Invalid JSON or failed to read request body")
	}
	fields, status, msg := cmd.run(o, body)
	if msg != "" {
		return fail(status, msg)
	}
	o.log.Info("AdminServer command run", "command", primary, "remote", r.RemoteAddr)
	if o.cfg.AuditEnable {
		o.audit.Info("audit", "ip", r.RemoteAddr, "operation", "admin "+primary, "result", "success")
	}
	return http.StatusOK, encodeJSON(append(fields, jsonField{"command", primary}, jsonField{"error", nil}))
}

// adminShedConnections is shed_connections: {"percentage": 0..100}
// (required), answering connections_shed and percentage_requested.
func (o *Surfaces) adminShedConnections(body []byte) (jsonObject, int, string) {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil, http.StatusBadRequest, "Request body is required"
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, http.StatusBadRequest, "Invalid JSON or failed to read request body: " + err.Error()
	}
	raw, ok := req["percentage"]
	if !ok {
		return nil, http.StatusBadRequest, "Missing required field: percentage"
	}
	var percentage int
	if err := json.Unmarshal(raw, &percentage); err != nil {
		return nil, http.StatusBadRequest, "Invalid JSON or failed to read request body: percentage: " + err.Error()
	}
	if percentage < 0 || percentage > 100 {
		return nil, http.StatusBadRequest, "Percentage must be between 0 and 100"
	}
	shedder, ok := o.st.(connectionShedder)
	if !ok {
		return nil, http.StatusInternalServerError, "this server cannot shed connections"
	}
	n, err := shedder.ShedConnections(percentage)
	if err != nil {
		return nil, http.StatusBadRequest, err.Error()
	}
	return jsonObject{{"connections_shed", n}, {"percentage_requested", percentage}}, http.StatusOK, ""
}

// adminTransferLeadership is transfer_leadership: an empty body or
// {"target": id}. It answers the previous and the new leader's ids; 409
// when this member does not lead or the target cannot lead, 503 when no
// member took over in time.
func (o *Surfaces) adminTransferLeadership(body []byte) (jsonObject, int, string) {
	var req struct {
		Target int64 `json:"target"`
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, http.StatusBadRequest, "Invalid JSON or failed to read request body: " + err.Error()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), transferTimeout)
	defer cancel()
	start := time.Now()
	leader, err := o.st.Replica().TransferLeadership(ctx, req.Target)
	switch {
	case errors.Is(err, replication.ErrNotLeader), errors.Is(err, replication.ErrNoTransferTarget):
		return nil, http.StatusConflict, err.Error()
	case err != nil:
		return nil, http.StatusServiceUnavailable, err.Error()
	}
	return jsonObject{
		{"previous_leader", o.cfg.MyID},
		{"leader", leader},
		{"took_ms", time.Since(start).Milliseconds()},
	}, http.StatusOK, ""
}

// adminAuthorizer checks the callers of the POST commands;
// *server.Server implements it with the client port's providers
// (server/adminauth.go).
type adminAuthorizer interface {
	AuthorizeAdmin(c server.AdminCredentials, perm int32, path string) error
}

// authorize returns 200, or the status and message ZooKeeper answers: 401
// without the Authorization header ("scheme" or "scheme auth") or with
// credentials that do not authenticate, 403 when the identities hold no
// permission of ALL on "/" (ZooKeeper's AuthRequest(Perms.ALL, "/")).
func (o *Surfaces) authorize(r *http.Request) (int, string) {
	info := r.Header.Get("Authorization")
	if info == "" {
		return http.StatusUnauthorized, errAuthMissing
	}
	parts := strings.Split(info, " ")
	if len(parts) != 1 && len(parts) != 2 {
		return http.StatusUnauthorized, errNotAuthenticated
	}
	c := server.AdminCredentials{Scheme: parts[0], Remote: remoteAddr(r)}
	if len(parts) == 2 {
		c.Auth = []byte(parts[1])
	}
	if r.TLS != nil {
		c.Certs = r.TLS.PeerCertificates
	}
	authz, ok := o.st.(adminAuthorizer)
	if !ok {
		return http.StatusInternalServerError, "Error occurred during auth"
	}
	err := authz.AuthorizeAdmin(c, jute.PermAll, "/")
	switch {
	case errors.Is(err, server.ErrAdminNotAuthenticated):
		return http.StatusUnauthorized, errNotAuthenticated
	case err != nil:
		return http.StatusForbidden, errNotAuthorized
	}
	return http.StatusOK, ""
}

// remoteAddr is the HTTP client's address (nil when it cannot be
// parsed), for the ip scheme.
func remoteAddr(r *http.Request) net.Addr {
	host, port, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return nil
	}
	p, err := strconv.Atoi(port)
	ip := net.ParseIP(host)
	if err != nil || ip == nil {
		return nil
	}
	return &net.TCPAddr{IP: ip, Port: p}
}
