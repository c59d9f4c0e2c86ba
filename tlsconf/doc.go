// Package tlsconf builds TLS configurations from ZooKeeper's settings, for
// the client port (ssl.*) and for the links between members (ssl.quorum.*,
// read through OptionsFrom): it loads keystores and truststores of the
// types ZooKeeper reads (PKCS12 through software.sslmate.com/src/go-pkcs12,
// JKS through github.com/pavlo-v-chernykh/keystore-go, and PEM), maps Java's
// protocol and cipher suite names to Go's, reloads the files when they
// change (Reloader), and tells a TLS client from a plaintext one by its
// first byte for port unification (sniff.go). It imports package conf only.
package tlsconf
