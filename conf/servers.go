package conf

import (
	"strconv"
	"strings"
)

// addServer parses a "server.N" line:
//
//	host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]
//
// Hosts may be IPv6 literals in brackets. Pipe-separated multi-address
// lists (multiAddress.enabled) are not supported.
func (p *parser) addServer(key, v string) error {
	id, err := strconv.ParseInt(strings.TrimPrefix(key, "server."), 10, 64)
	if err != nil {
		return keyErr(key, v, "does not name a numeric server id")
	}
	s, err := parseServer(key, v)
	if err != nil {
		return err
	}
	s.ID = id
	p.c.Servers = append(p.c.Servers, s)
	return nil
}

// parseServer parses the value of a server.N line.
func parseServer(key, v string) (Server, error) {
	const form = "is not host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]"
	if strings.Contains(v, "|") {
		return Server{}, keyErr(key, v, "lists several addresses (|), which is not supported")
	}
	serverPart, clientPart, hasClient := strings.Cut(v, ";")
	if strings.Contains(clientPart, ";") {
		return Server{}, keyErr(key, v, form)
	}
	parts, ok := splitHostFirst(serverPart)
	if !ok || len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
		return Server{}, keyErr(key, v, form)
	}
	s := Server{Host: parts[0]}
	if s.PeerPort, ok = atoiPort(parts[1]); !ok {
		return Server{}, keyErr(key, v, "has a bad quorum port %q", parts[1])
	}
	if s.ElectionPort, ok = atoiPort(parts[2]); !ok {
		return Server{}, keyErr(key, v, "has a bad election port %q", parts[2])
	}
	if s.PeerPort == s.ElectionPort {
		return Server{}, keyErr(key, v, "uses the same port for quorum and election")
	}
	if len(parts) == 4 {
		switch strings.ToLower(parts[3]) {
		case "participant":
		case "observer":
			s.Observer = true
		default:
			return Server{}, keyErr(key, v, "has an unknown peer type %q", parts[3])
		}
	}
	if hasClient {
		cp, ok := splitHostFirst(clientPart)
		if !ok || len(cp) > 2 {
			return Server{}, keyErr(key, v, form)
		}
		if len(cp) == 2 {
			s.ClientAddress = cp[0]
		}
		if s.ClientPort, ok = atoiPort(cp[len(cp)-1]); !ok || s.ClientPort == 0 {
			return Server{}, keyErr(key, v, "has a bad client port %q", cp[len(cp)-1])
		}
	}
	return s, nil
}

// splitHostFirst splits s on colons, except that a leading "[...]" IPv6
// literal is one (unbracketed) element. ok is false for an unclosed
// bracket.
func splitHostFirst(s string) ([]string, bool) {
	if !strings.HasPrefix(s, "[") {
		return strings.Split(s, ":"), true
	}
	end := strings.Index(s, "]:")
	if end < 0 {
		return nil, false
	}
	return append([]string{s[1:end]}, strings.Split(s[end+2:], ":")...), true
}

// atoiPort parses a decimal port number; range is checked by Validate.
func atoiPort(s string) (int, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int(n), err == nil
}

// ParseServerLine parses one "server.N=spec" line as found in a dynamic
// configuration (/zookeeper/config) or a reconfig request.
func ParseServerLine(line string) (Server, error) {
	key, v, ok := strings.Cut(strings.TrimSpace(line), "=")
	if !ok || !strings.HasPrefix(key, "server.") {
		return Server{}, keyErr(line, "", "is not server.N=spec")
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(key, "server."), 10, 64)
	if err != nil || id <= 0 {
		return Server{}, keyErr(key, v, "does not name a positive numeric server id")
	}
	s, err := parseServer(key, strings.TrimSpace(v))
	if err != nil {
		return Server{}, err
	}
	s.ID = id
	return s, nil
}
