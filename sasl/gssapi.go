package sasl

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Krb5LoginModule is the JAAS login module whose keyTab and principal give
// the server its Kerberos identity.
const Krb5LoginModule = "com.sun.security.auth.module.Krb5LoginModule"

// DefaultKrb5Conf is read when java.security.krb5.conf is not set.
const DefaultKrb5Conf = "/etc/krb5.conf"

// defaultClockSkew is Kerberos' default clockskew (krb5.conf libdefaults).
const defaultClockSkew = 5 * time.Minute

// RFC 4752 security layers: the server offers only "no security layer", as
// ZooKeeper's client port uses no SASL integrity or privacy.
const (
	layerNone = 1
	// serverMaxBuffer is the maximum message size the server announces
	// (as the JDK's GSSAPI server does).
	serverMaxBuffer = 65536
)

// RFC 4121 wrap token flags.
const (
	wrapSentByAcceptor = 0x01
	wrapSealed         = 0x02
)

// gssMutualFlag is GSS_C_MUTUAL_FLAG in the authenticator checksum (RFC
// 4121 4.1.1.1).
const gssMutualFlag = 2

// Kerberos is the server's GSSAPI identity: its service principal and the
// keys of the keytab. It is read-only once loaded and shared by every
// exchange.
type Kerberos struct {
	keytab    *keytab.Keytab
	principal string // the keytab principal without the realm, e.g. zookeeper/localhost
	realm     string
	clockSkew time.Duration
}

// Principal is the service principal, name@REALM.
func (k *Kerberos) Principal() string { return k.principal + "@" + k.realm }

// LoadKerberos reads the keyTab and principal options of a Krb5LoginModule
// entry and the Kerberos configuration at krb5conf ("" means
// DefaultKrb5Conf when it exists): its default_realm completes a principal
// without a realm and its clockskew bounds the authenticator's time.
func LoadKerberos(m LoginModule, krb5conf string) (*Kerberos, error) {
	if !strings.EqualFold(m.Options["useKeyTab"], "true") || m.Options["keyTab"] == "" {
		return nil, fmt.Errorf("sasl: %s: the server needs useKeyTab=true and keyTab", Krb5LoginModule)
	}
	principal := m.Options["principal"]
	if principal == "" {
		return nil, fmt.Errorf("sasl: %s: no principal", Krb5LoginModule)
	}
	defRealm, skew, err := krb5Defaults(krb5conf)
	if err != nil {
		return nil, err
	}
	name, realm, hasRealm := strings.Cut(principal, "@")
	if !hasRealm {
		realm = defRealm
	}
	if name == "" || realm == "" {
		return nil, fmt.Errorf("sasl: %s: principal %q has no realm and krb5.conf names no default_realm", Krb5LoginModule, principal)
	}
	kt, err := keytab.Load(m.Options["keyTab"])
	if err != nil {
		return nil, fmt.Errorf("sasl: keytab %s: %w", m.Options["keyTab"], err)
	}
	k := &Kerberos{keytab: kt, principal: name, realm: realm, clockSkew: skew}
	if !k.hasKey() {
		return nil, fmt.Errorf("sasl: keytab %s holds no key for %s", m.Options["keyTab"], k.Principal())
	}
	return k, nil
}

// hasKey reports whether the keytab holds a key of the principal.
func (k *Kerberos) hasKey() bool {
	pn, _ := types.ParseSPNString(k.principal)
	for _, e := range k.keytab.Entries {
		if e.Principal.Realm == k.realm && slices.Equal(e.Principal.Components, pn.NameString) {
			return true
		}
	}
	return false
}

// DefaultRealm returns the default_realm of the Kerberos configuration at
// path ("" means DefaultKrb5Conf), the realm that the DEFAULT
// auth_to_local rule maps; loaded is false (and realm "") when the file
// does not load.
func DefaultRealm(path string) (realm string, loaded bool) {
	if path == "" {
		path = DefaultKrb5Conf
	}
	c, err := config.Load(path)
	if err != nil {
		return "", false
	}
	return c.LibDefaults.DefaultRealm, true
}

// krb5Defaults returns the default realm and clock skew of a krb5.conf. An
// explicit path must load; the default one is used only if it loads.
func krb5Defaults(path string) (string, time.Duration, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultKrb5Conf
	}
	c, err := config.Load(path)
	if err != nil && !explicit {
		// An absent or unreadable system krb5.conf leaves the defaults:
		// the principal must then name its realm.
		return "", defaultClockSkew, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("sasl: java.security.krb5.conf %s: %w", path, err)
	}
	skew := c.LibDefaults.Clockskew
	if skew <= 0 {
		skew = defaultClockSkew
	}
	return c.LibDefaults.DefaultRealm, skew, nil
}

// gssStep is where a GSSAPI exchange stands.
type gssStep int

const (
	gssAccept      gssStep = iota // next: the client's AP-REQ
	gssAwaitEmpty                 // AP-REP sent; next: the client's empty token
	gssAwaitChoice                // security layers offered; next: the client's choice
	gssDone                       // authenticated
	gssFailed                     // failed; every later token fails
)

// GSSAPIServer is the server side of the RFC 4752 GSSAPI mechanism over
// Kerberos V5 (RFC 4121): the client's AP-REQ, an AP-REP when the client
// asks for mutual authentication, then the security-layer negotiation in
// wrap tokens. Only "no security layer" is offered.
type GSSAPIServer struct {
	k      *Kerberos
	step   gssStep
	key    types.EncryptionKey // the context key: the initiator's subkey or the session key
	seq    uint64              // the acceptor's next send sequence number
	client string              // the client principal, name@REALM
	authz  string              // the authorization id the client asked for
}

// NewGSSAPIServer starts an exchange for the service k.
func NewGSSAPIServer(k *Kerberos) *GSSAPIServer { return &GSSAPIServer{k: k} }

// Complete reports whether the client has authenticated.
func (s *GSSAPIServer) Complete() bool { return s.step == gssDone }

// AuthenticationID is the client's principal, name[/host]@REALM.
func (s *GSSAPIServer) AuthenticationID() string { return s.client }

// AuthorizationID is the authorization id of the client's security layer
// answer ("" when it sent none).
func (s *GSSAPIServer) AuthorizationID() string { return s.authz }

// Evaluate runs one step of the exchange.
func (s *GSSAPIServer) Evaluate(token []byte) ([]byte, error) {
	var out []byte
	var err error
	switch s.step {
	case gssAccept:
		out, err = s.accept(token)
	case gssAwaitEmpty:
		if len(token) != 0 {
			err = fmt.Errorf("%w: GSSAPI: unexpected token after the AP-REP", ErrFailed)
			break
		}
		out, err = s.offer()
	case gssAwaitChoice:
		err = s.choose(token)
	default:
		err = fmt.Errorf("%w: GSSAPI: token after the exchange ended", ErrFailed)
	}
	if err != nil {
		s.step = gssFailed
		return nil, err
	}
	return out, nil
}

// accept verifies the client's AP-REQ against the keytab and answers with
// an AP-REP (mutual authentication) or the security-layer offer.
func (s *GSSAPIServer) accept(token []byte) (out []byte, err error) {
	defer func() {
		// The ASN.1 decoding is the library's; a malformed token must fail
		// the login, not the process.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: GSSAPI: malformed token: %v", ErrFailed, r)
		}
	}()
	var t spnego.KRB5Token
	if err := t.Unmarshal(token); err != nil {
		return nil, fmt.Errorf("%w: GSSAPI: %w", ErrFailed, err)
	}
	if !t.IsAPReq() {
		return nil, fmt.Errorf("%w: GSSAPI: the first token is not an AP-REQ", ErrFailed)
	}
	req := &t.APReq
	settings := service.NewSettings(s.k.keytab, service.KeytabPrincipal(s.k.principal),
		service.MaxClockSkew(s.k.clockSkew), service.DecodePAC(false))
	ok, _, err := service.VerifyAPREQ(req, settings)
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: GSSAPI: AP-REQ for %s: %v", ErrFailed, req.Ticket.SName.PrincipalNameString(), err)
	}
	a := req.Authenticator
	if a.Cksum.CksumType != chksumtype.GSSAPI || len(a.Cksum.Checksum) < 24 {
		return nil, fmt.Errorf("%w: GSSAPI: the authenticator has no GSS-API checksum", ErrFailed)
	}
	s.client = a.CName.PrincipalNameString() + "@" + a.CRealm
	s.key = req.Ticket.DecryptedEncPart.Key
	if len(a.SubKey.KeyValue) > 0 {
		s.key = a.SubKey
	}
	s.seq = uint64(a.SeqNumber)
	gssFlags := uint32(a.Cksum.Checksum[20]) | uint32(a.Cksum.Checksum[21])<<8 |
		uint32(a.Cksum.Checksum[22])<<16 | uint32(a.Cksum.Checksum[23])<<24
	if gssFlags&gssMutualFlag == 0 && !types.IsFlagSet(&req.APOptions, flags.APOptionMutualRequired) {
		return s.offer()
	}
	rep, err := apRep(a, req.Ticket.DecryptedEncPart.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: GSSAPI: %w", ErrFailed, err)
	}
	s.step = gssAwaitEmpty
	return rep, nil
}

// apRep builds the GSS-API token holding the AP-REP for authenticator a:
// its time and sequence number, encrypted in the ticket's session key.
func apRep(a types.Authenticator, sessionKey types.EncryptionKey) ([]byte, error) {
	part := messages.EncAPRepPart{CTime: a.CTime, Cusec: a.Cusec, SequenceNumber: a.SeqNumber}
	b, err := asn1.Marshal(part)
	if err != nil {
		return nil, fmt.Errorf("AP-REP: %w", err)
	}
	b = asn1tools.AddASNAppTag(b, asnAppTag.EncAPRepPart)
	enc, err := crypto.GetEncryptedData(b, sessionKey, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, fmt.Errorf("AP-REP: %w", err)
	}
	rep, err := asn1.Marshal(messages.APRep{PVNO: iana.PVNO, MsgType: msgtype.KRB_AP_REP, EncPart: enc})
	if err != nil {
		return nil, fmt.Errorf("AP-REP: %w", err)
	}
	oid, err := asn1.Marshal(gssapi.OIDKRB5.OID())
	if err != nil {
		return nil, fmt.Errorf("AP-REP: %w", err)
	}
	tok := append(oid, 0x02, 0x00) // TOK_ID of an AP-REP (RFC 4121 4.1)
	tok = append(tok, asn1tools.AddASNAppTag(rep, asnAppTag.APREP)...)
	return asn1tools.AddASNAppTag(tok, 0), nil
}

// offer sends the wrapped security-layer offer: the layer bit mask and the
// server's maximum buffer size.
func (s *GSSAPIServer) offer() ([]byte, error) {
	payload := []byte{layerNone, 0, 0, 0}
	max := uint32(serverMaxBuffer)
	payload[1], payload[2], payload[3] = byte(max>>16), byte(max>>8), byte(max)
	et, err := crypto.GetEtype(s.key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("%w: GSSAPI: %w", ErrFailed, err)
	}
	wt := gssapi.WrapToken{Flags: wrapSentByAcceptor, EC: uint16(et.GetHMACBitLength() / 8), SndSeqNum: s.seq, Payload: payload}
	if err := wt.SetCheckSum(s.key, keyusage.GSSAPI_ACCEPTOR_SEAL); err != nil {
		return nil, fmt.Errorf("%w: GSSAPI: wrap: %w", ErrFailed, err)
	}
	s.seq++
	out, err := wt.Marshal()
	if err != nil {
		return nil, fmt.Errorf("%w: GSSAPI: wrap: %w", ErrFailed, err)
	}
	s.step = gssAwaitChoice
	return out, nil
}

// choose checks the client's wrapped answer: "no security layer", and
// keeps the authorization id that follows.
func (s *GSSAPIServer) choose(token []byte) error {
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(unrotate(token), false); err != nil {
		return fmt.Errorf("%w: GSSAPI: the security layer answer: %w", ErrFailed, err)
	}
	if wt.Flags&wrapSealed != 0 {
		return fmt.Errorf("%w: GSSAPI: a sealed security layer answer is not supported", ErrFailed)
	}
	if ok, err := wt.Verify(s.key, keyusage.GSSAPI_INITIATOR_SEAL); !ok {
		return fmt.Errorf("%w: GSSAPI: the security layer answer: %v", ErrFailed, err)
	}
	p := wt.Payload
	if len(p) < 4 {
		return fmt.Errorf("%w: GSSAPI: the security layer answer has %d bytes", ErrFailed, len(p))
	}
	if p[0] != layerNone {
		return fmt.Errorf("%w: GSSAPI: the client chose security layer %#x; only none (1) is offered", ErrFailed, p[0])
	}
	// As the JDK's GSSAPI server, any authorization id goes to the
	// authorization decision (NameRules.Identity), which ZooKeeper makes.
	s.authz = string(p[4:])
	s.step = gssDone
	return nil
}

// unrotate undoes a wrap token's right rotation (RRC, RFC 4121 4.2.5) so
// that the checksum is at the end.
func unrotate(b []byte) []byte {
	if len(b) <= gssapi.HdrLen {
		return b
	}
	rrc := int(b[6])<<8 | int(b[7])
	data := b[gssapi.HdrLen:]
	if rrc%len(data) == 0 {
		return b
	}
	r := rrc % len(data)
	out := make([]byte, 0, len(b))
	out = append(out, b[:gssapi.HdrLen]...)
	out = append(out, data[r:]...)
	return append(out, data[:r]...)
}
