// Package gssapitest is a client side of the RFC 4752 GSSAPI SASL mechanism
// for tests: given a service ticket and its session key (from a KDC or
// made up with a keytab), it builds the AP-REQ, checks the AP-REP, and
// answers the security-layer offer. It is imported by tests only.
package gssapitest

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Client is one GSSAPI login. Set the exported fields, then call Initial
// and Step with each server token until Done.
type Client struct {
	Ticket     messages.Ticket
	SessionKey types.EncryptionKey
	CName      types.PrincipalName
	CRealm     string
	// Mutual asks for mutual authentication (an AP-REP).
	Mutual bool
	// SubKey puts an initiator subkey in the authenticator.
	SubKey bool
	// AuthzID is sent with the security layer choice.
	AuthzID string
	// Layer is the security layer chosen (0 means 1, none).
	Layer byte

	auth   types.Authenticator
	key    types.EncryptionKey
	gotRep bool
	// Done is set once the security layer answer is built.
	Done bool
}

// Initial returns the InitialContextToken holding the AP-REQ.
func (c *Client) Initial() ([]byte, error) {
	auth, err := types.NewAuthenticator(c.CRealm, c.CName)
	if err != nil {
		return nil, err
	}
	if c.SubKey {
		et, err := crypto.GetEtype(c.SessionKey.KeyType)
		if err != nil {
			return nil, err
		}
		if err := auth.GenerateSeqNumberAndSubKey(c.SessionKey.KeyType, et.GetKeyByteSize()); err != nil {
			return nil, err
		}
	}
	gssFlags := uint32(gssapi.ContextFlagInteg | gssapi.ContextFlagConf)
	if c.Mutual {
		gssFlags |= gssapi.ContextFlagMutual
	}
	sum := make([]byte, 24)
	binary.LittleEndian.PutUint32(sum[:4], 16)
	binary.LittleEndian.PutUint32(sum[20:], gssFlags)
	auth.Cksum = types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: sum}
	req, err := messages.NewAPReq(c.Ticket, c.SessionKey, auth)
	if err != nil {
		return nil, err
	}
	if c.Mutual {
		types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	}
	b, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	c.auth = auth
	c.key = c.SessionKey
	if c.SubKey {
		c.key = auth.SubKey
	}
	oid, _ := asn1.Marshal(gssapi.OIDKRB5.OID())
	tok := append(oid, 0x01, 0x00)
	return asn1tools.AddASNAppTag(append(tok, b...), 0), nil
}

// Step answers a server token: an AP-REP (checked; the answer is empty)
// or the wrapped security-layer offer.
func (c *Client) Step(tok []byte) ([]byte, error) {
	if c.Mutual && !c.gotRep {
		if err := c.checkAPRep(tok); err != nil {
			return nil, err
		}
		c.gotRep = true
		return []byte{}, nil
	}
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(tok, true); err != nil {
		return nil, fmt.Errorf("offer: %w", err)
	}
	if ok, err := wt.Verify(c.key, keyusage.GSSAPI_ACCEPTOR_SEAL); !ok {
		return nil, fmt.Errorf("offer: %w", err)
	}
	if wt.SndSeqNum != uint64(c.auth.SeqNumber) {
		return nil, fmt.Errorf("offer: sequence number %d, want %d", wt.SndSeqNum, c.auth.SeqNumber)
	}
	if len(wt.Payload) != 4 || wt.Payload[0]&1 == 0 {
		return nil, fmt.Errorf("offer %x: want 4 bytes offering no security layer", wt.Payload)
	}
	layer := c.Layer
	if layer == 0 {
		layer = 1
	}
	answer := append([]byte{layer, 0, 0, 0}, c.AuthzID...)
	out, err := gssapi.NewInitiatorWrapToken(answer, c.key)
	if err != nil {
		return nil, err
	}
	c.Done = true
	return out.Marshal()
}

// checkAPRep decrypts the AP-REP and checks it echoes the authenticator.
func (c *Client) checkAPRep(tok []byte) error {
	var t spnego.KRB5Token
	if err := t.Unmarshal(tok); err != nil {
		return fmt.Errorf("AP-REP: %w", err)
	}
	if !t.IsAPRep() {
		return errors.New("AP-REP: the server's token is not an AP-REP")
	}
	plain, err := crypto.DecryptEncPart(t.APRep.EncPart, c.SessionKey, keyusage.AP_REP_ENCPART)
	if err != nil {
		return fmt.Errorf("AP-REP: %w", err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return fmt.Errorf("AP-REP: %w", err)
	}
	if !part.CTime.Equal(c.auth.CTime.Truncate(1e9)) || part.Cusec != c.auth.Cusec || part.SequenceNumber != c.auth.SeqNumber {
		return fmt.Errorf("AP-REP: ctime %v cusec %d seq %d do not echo the authenticator (%v %d %d)",
			part.CTime, part.Cusec, part.SequenceNumber, c.auth.CTime, c.auth.Cusec, c.auth.SeqNumber)
	}
	return nil
}
