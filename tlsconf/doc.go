// Package tlsconf builds the client port's TLS configuration from
// ZooKeeper's settings: it loads keystores and truststores of the types
// ZooKeeper reads (PKCS12 through software.sslmate.com/src/go-pkcs12, JKS
// through github.com/pavlo-v-chernykh/keystore-go, and PEM), maps Java's
// protocol and cipher suite names to Go's, and reloads the files when they
// change (Reloader). It imports no other package of the project.
package tlsconf
