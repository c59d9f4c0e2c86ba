// Package sasl holds the server side of ZooKeeper's SASL login on the client
// port: the JAAS configuration file that names the users and the Kerberos
// keytab (ParseJAAS), the mechanism interface the connection drives with the
// tokens of the sasl request (opcode 102), the DIGEST-MD5 mechanism (RFC
// 2831, qop "auth" only, as ZooKeeper) and the GSSAPI mechanism (RFC 4752
// over Kerberos V5, RFC 4121, with github.com/jcmturner/gokrb5), chosen by
// NewFactory.
package sasl
