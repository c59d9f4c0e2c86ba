package server

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/txnlog"
)

// configPath is the znode holding the ensemble's dynamic configuration.
const configPath = "/zookeeper/config"

// dynamicConfig is the membership part of /zookeeper/config.
type dynamicConfig struct {
	servers map[int64]conf.Server
	version int64
}

// parseDynamicConfig reads "server.N=..." lines and "version=<hex>".
func parseDynamicConfig(data []byte) (dynamicConfig, error) {
	dc := dynamicConfig{servers: map[int64]conf.Server{}}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "version="):
			v, err := strconv.ParseInt(strings.TrimPrefix(line, "version="), 16, 64)
			if err != nil {
				return dc, err
			}
			dc.version = v
		default:
			s, err := conf.ParseServerLine(line)
			if err != nil {
				return dc, err
			}
			dc.servers[s.ID] = s
		}
	}
	return dc, nil
}

// lines renders the server lines (without the version), sorted by id.
func (dc dynamicConfig) lines() []byte {
	ids := make([]int64, 0, len(dc.servers))
	for id := range dc.servers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	for _, id := range ids {
		b.WriteString("server." + strconv.FormatInt(id, 10) + "=" + dc.servers[id].String() + "\n")
	}
	return []byte(b.String())
}

// voters counts the participants.
func (dc dynamicConfig) voters() int {
	n := 0
	for _, s := range dc.servers {
		if !s.Observer {
			n++
		}
	}
	return n
}

// errReconfig carries the ZooKeeper code a reconfig fails with.
type errReconfig struct{ code jute.Code }

func (e errReconfig) Error() string { return e.code.Error() }

// planReconfig computes the next configuration of a reconfig request:
// incremental (joining/leaving) or a complete new member list.
func planReconfig(cur dynamicConfig, req *jute.ReconfigRequest) (dynamicConfig, replication.MembershipChange, error) {
	var change replication.MembershipChange
	if req.CurConfigID != -1 && req.CurConfigID != cur.version {
		return cur, change, errReconfig{jute.BadVersion}
	}
	next := dynamicConfig{servers: map[int64]conf.Server{}}
	if req.NewMembers != "" {
		if req.JoiningServers != "" || req.LeavingServers != "" {
			return cur, change, errReconfig{jute.BadArguments}
		}
		for _, line := range splitServers(req.NewMembers) {
			s, err := conf.ParseServerLine(line)
			if err != nil {
				return cur, change, errReconfig{jute.BadArguments}
			}
			next.servers[s.ID] = s
		}
	} else {
		for id, s := range cur.servers {
			next.servers[id] = s
		}
		for _, line := range splitServers(req.JoiningServers) {
			s, err := conf.ParseServerLine(line)
			if err != nil {
				return cur, change, errReconfig{jute.BadArguments}
			}
			next.servers[s.ID] = s
		}
		for _, f := range splitServers(req.LeavingServers) {
			id, err := strconv.ParseInt(strings.TrimPrefix(f, "server."), 10, 64)
			if err != nil {
				return cur, change, errReconfig{jute.BadArguments}
			}
			delete(next.servers, id)
		}
	}
	if next.voters() == 0 {
		return cur, change, errReconfig{jute.NewConfigNoQuorum}
	}
	for id, s := range next.servers {
		if old, ok := cur.servers[id]; !ok || old.Observer != s.Observer {
			if ok {
				change.Remove = append(change.Remove, id)
			}
			change.Add = append(change.Add, peerOf(s))
		}
	}
	for id := range cur.servers {
		if _, ok := next.servers[id]; !ok {
			change.Remove = append(change.Remove, id)
		}
	}
	return next, change, nil
}

// splitServers splits a reconfig list (comma- or newline-separated).
func splitServers(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// reconfigure runs a reconfig request: permission (WRITE on
// /zookeeper/config, which only a super user or skipACL has by default),
// the version check, the raft membership change on the leader, and then the
// replicated update of /zookeeper/config. It returns the reply.
func (c *conn) reconfigure(req *jute.ReconfigRequest, ids []jute.ID) (int64, jute.Code, jute.Record) {
	s := c.s
	if !s.node.Clustered() {
		return s.node.LastZxid(), jute.Unimplemented, nil
	}
	tree := s.node.Tree()
	acls, _, _ := tree.GetACL(configPath, nil)
	if !s.cfg.SkipACL && !s.auth.Allowed(acls, ids, jute.PermWrite) {
		return s.node.LastZxid(), jute.NoAuth, nil
	}
	data, _, _ := tree.GetData(configPath, nil, nil)
	cur, err := parseDynamicConfig(data)
	if err != nil {
		return s.node.LastZxid(), jute.SystemError, nil
	}
	next, change, err := planReconfig(cur, req)
	var rerr errReconfig
	if errors.As(err, &rerr) {
		return s.node.LastZxid(), rerr.code, nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, c.writeTimeout())
	defer cancel()
	if err := s.node.ChangeMembership(ctx, change); err != nil {
		c.log.Warn("reconfig failed", "err", err)
		return s.node.LastZxid(), jute.NewConfigNoQuorum, nil
	}
	out := <-s.node.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: txnlog.OpSetConfig,
		SessionID: c.sessionID.Load(), IDs: ids, Request: &jute.SetDataRequest{Path: configPath, Data: next.lines(), Version: -1}}})
	if out.Err != nil {
		return s.node.LastZxid(), jute.ConnectionLoss, nil
	}
	return out.Zxid, out.Result.Err, out.Result.Response
}

// learnConfig updates this member's address book from an applied
// configuration, so it can reach members added by reconfig.
func (s *Server) learnConfig(data []byte) {
	dc, err := parseDynamicConfig(data)
	if err != nil {
		s.log.Warn("unreadable dynamic configuration", "err", err)
		return
	}
	peers := make([]replication.Peer, 0, len(dc.servers))
	for _, srv := range dc.servers {
		peers = append(peers, peerOf(srv))
	}
	s.node.LearnPeers(peers)
}
