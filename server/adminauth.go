package server

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"github.com/zkserverd/zkserverd/acl"
	"github.com/zkserverd/zkserverd/jute"
)

// Errors of AuthorizeAdmin; the AdminServer answers 401 and 403 for them,
// as ZooKeeper's does.
var (
	ErrAdminNotAuthenticated = errors.New("server: admin command: not authenticated")
	ErrAdminNotAuthorized    = errors.New("server: admin command: not authorized")
)

// AdminCredentials are what a caller of a state-changing AdminServer
// command presents: the scheme and auth of its Authorization header
// ("digest user:password", "ip", "x509"), its address and its verified
// client certificates.
type AdminCredentials struct {
	Scheme string
	Auth   []byte // nil when the header names the scheme only
	Remote net.Addr
	Certs  []*x509.Certificate
}

// AuthorizeAdmin checks a caller of a state-changing AdminServer command
// as ZooKeeper's Commands.handleAuthentication and handleAuthorization
// do: the scheme's provider (the client port's: the built-in schemes, the
// super digest and the configured authProvider.N) turns the credentials
// into identities (else ErrAdminNotAuthenticated), and those must hold a
// permission of perm on the znode at path (else ErrAdminNotAuthorized;
// skipACL allows everything).
func (s *Server) AuthorizeAdmin(c AdminCredentials, perm int32, path string) error {
	ids, err := s.auth.Authenticate(c.Scheme, acl.ConnInfo{RemoteAddr: c.Remote, PeerCertificates: c.Certs}, c.Auth)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAdminNotAuthenticated, err)
	}
	if s.cfg.SkipACL {
		return nil
	}
	nodeACL, _, code := s.node.Tree().GetACL(path, ids)
	if code != jute.OK {
		return fmt.Errorf("%w: read the ACL of %s: %v", ErrAdminNotAuthorized, path, code)
	}
	if !s.auth.Allowed(nodeACL, ids, perm) {
		return fmt.Errorf("%w: %v may not change %s", ErrAdminNotAuthorized, ids, path)
	}
	return nil
}
