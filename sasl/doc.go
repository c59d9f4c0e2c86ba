// Package sasl holds ZooKeeper's SASL logins: the JAAS configuration file
// that names the users, the members' credentials and the Kerberos keytab
// (ParseJAAS); the mechanism interface a client connection drives with the
// tokens of the sasl request (opcode 102); the DIGEST-MD5 mechanism (RFC
// 2831, qop "auth" only, as ZooKeeper), both its server and the client side
// that ensemble members log in to each other with (package peernet); the
// GSSAPI mechanism (RFC 4752 over Kerberos V5, RFC 4121, with
// github.com/jcmturner/gokrb5), chosen by NewFactory; and the Kerberos name
// rules (auth_to_local) that turn an authenticated principal into the id
// ACLs see. It imports no other package of the project.
package sasl
