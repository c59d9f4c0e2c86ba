// Package sasl holds the server side of ZooKeeper's SASL login on the client
// port: the JAAS configuration file that names the users (ParseJAAS), the
// mechanism interface the connection drives with the tokens of the sasl
// request (opcode 102), and the DIGEST-MD5 mechanism (RFC 2831, qop "auth"
// only, as ZooKeeper). GSSAPI (Kerberos) is not implemented: a JAAS Server
// section without DigestLoginModule users gives no mechanism (see NewFactory).
package sasl
