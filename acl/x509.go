package acl

import (
	"fmt"

	"github.com/zkserverd/zkserverd/jute"
)

// X509Provider is the x509 scheme: the identity of a TLS client is the
// subject DN of its certificate, printed as Java's
// X500Principal.getName() (RFC 2253) prints it, e.g.
// "CN=client1,OU=ops,O=Example,C=US". Verifying the chain is the TLS
// layer's job: ConnInfo.PeerCertificates must come from a handshake that
// required and verified client certificates.
type X509Provider struct {
	superUser string
}

var _ Provider = (*X509Provider)(nil)

// NewX509Provider returns the x509 provider. A client whose DN equals
// superUser (ZooKeeper's zookeeper.X509AuthenticationProvider.superUser) also
// gets a super id and matches every x509 ACL entry; "" disables that.
func NewX509Provider(superUser string) *X509Provider {
	return &X509Provider{superUser: superUser}
}

// Scheme implements Provider.
func (*X509Provider) Scheme() string { return SchemeX509 }

// Authenticate implements Provider: it fails without a client certificate.
func (p *X509Provider) Authenticate(conn ConnInfo, _ []byte) ([]jute.ID, error) {
	if len(conn.PeerCertificates) == 0 || conn.PeerCertificates[0] == nil {
		return nil, fmt.Errorf("%w: no client certificate", ErrAuthFailed)
	}
	dn, err := SubjectDN(conn.PeerCertificates[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthFailed, err)
	}
	var ids []jute.ID
	if p.superUser != "" && dn == p.superUser {
		ids = append(ids, jute.ID{Scheme: SchemeSuper, ID: dn})
	}
	return append(ids, jute.ID{Scheme: SchemeX509, ID: dn}), nil
}

// Matches implements Provider: equal DN strings, or id is the super user.
func (p *X509Provider) Matches(id, aclExpr string) bool {
	return id == aclExpr || (p.superUser != "" && id == p.superUser)
}

// IsValid implements Provider: id must parse as a distinguished name (see
// ValidDN).
func (*X509Provider) IsValid(id string) bool { return ValidDN(id) }

// IsAuthenticated implements Provider.
func (*X509Provider) IsAuthenticated() bool { return true }
