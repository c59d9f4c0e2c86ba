package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// storePassword protects every keystore and truststore the runner makes.
const storePassword = "changeit"

// keys is the directory of the key material of the secured scenarios,
// made fresh for each run by makeKeys with openssl and keytool:
//
//	ca.pem, ca.key            the suite's CA
//	rogue-ca.pem              a CA nobody trusts
//	truststore.jks            ca.pem as a JKS trusted-certificate entry (keytool)
//	server.p12                the servers' certificate chain and key (PKCS12, openssl)
//	alice.{pem,key,p12,jks}   client CN=alice,OU=compat,O=zkserverd
//	bob.{pem,key,p12}         client CN=bob,OU=compat,O=zkserverd
//	mallory.{pem,key,p12}     a client certificate from rogue-ca
//	expired.{pem,key,p12}     a client certificate from ca whose notAfter has passed
//
// Every leaf certificate carries subjectAltName IP:127.0.0.1 and
// DNS:localhost, so it serves for host name verification on loopback (the
// server's and, in an ensemble with quorum TLS, every member's). Scenario
// programs find the directory in the environment variable keysEnv.
type keys string

// keysEnv names the environment variable that tells secured scenario
// programs where the key material is.
const keysEnv = "ZKCOMPAT_KEYS"

// Subjects of the client certificates, as the x509 provider prints them.
const (
	aliceDN = "CN=alice,OU=compat,O=zkserverd"
	bobDN   = "CN=bob,OU=compat,O=zkserverd"
)

func (k keys) path(name string) string { return filepath.Join(string(k), name) }

// leaf describes one certificate signed by a CA of makeKeys.
type leaf struct {
	name, subject, ca string
	days              int // negative: expired before it was made
}

var leaves = []leaf{
	{"server", "/O=zkserverd/CN=localhost", "ca", 30},
	{"alice", "/O=zkserverd/OU=compat/CN=alice", "ca", 30},
	{"bob", "/O=zkserverd/OU=compat/CN=bob", "ca", 30},
	{"mallory", "/O=zkserverd/OU=compat/CN=mallory", "rogue-ca", 30},
	{"expired", "/O=zkserverd/OU=compat/CN=expired", "ca", -1},
}

// makeKeys writes the key material under dir.
func makeKeys(ctx context.Context, dir string) (keys, error) {
	k := keys(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return k, fmt.Errorf("make keys: %w", err)
	}
	if err := os.WriteFile(k.path("client-jaas.conf"), []byte(clientJAAS), 0o644); err != nil {
		return k, fmt.Errorf("make keys: %w", err)
	}
	san := k.path("san.ext")
	if err := os.WriteFile(san, []byte("subjectAltName=IP:127.0.0.1,DNS:localhost\n"), 0o644); err != nil {
		return k, fmt.Errorf("make keys: %w", err)
	}
	var steps [][]string
	for _, ca := range []string{"ca", "rogue-ca"} {
		steps = append(steps, []string{"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
			"-subj", "/O=zkserverd/CN=" + ca, "-keyout", ca + ".key", "-out", ca + ".pem"})
	}
	for i, l := range leaves {
		steps = append(steps,
			[]string{"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", l.subject,
				"-keyout", l.name + ".key", "-out", l.name + ".csr"},
			[]string{"openssl", "x509", "-req", "-in", l.name + ".csr", "-CA", l.ca + ".pem", "-CAkey", l.ca + ".key",
				"-set_serial", fmt.Sprint(100 + i), "-days", fmt.Sprint(l.days), "-extfile", san, "-out", l.name + ".pem"},
			[]string{"openssl", "pkcs12", "-export", "-in", l.name + ".pem", "-inkey", l.name + ".key",
				"-certfile", l.ca + ".pem", "-name", l.name, "-passout", "pass:" + storePassword, "-out", l.name + ".p12"})
	}
	steps = append(steps,
		[]string{"keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
			"-keystore", "truststore.jks", "-storetype", "JKS", "-storepass", storePassword},
		[]string{"keytool", "-importkeystore", "-noprompt", "-srckeystore", "alice.p12", "-srcstoretype", "PKCS12",
			"-srcstorepass", storePassword, "-destkeystore", "alice.jks", "-deststoretype", "JKS",
			"-deststorepass", storePassword, "-destkeypass", storePassword})
	for _, argv := range steps {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return k, fmt.Errorf("make keys: %s: %w\n%s", strings.Join(argv, " "), err, tail(string(out), 10))
		}
	}
	return k, nil
}

// clientJVMFlags are the flags a Java client (CLIENT_JVMFLAGS of zkCli.sh)
// needs for the secured server: TLS through the Netty socket, the suite's
// truststore and alice's certificate from a JKS keystore. Debian's zkCli.sh
// puts only zookeeper.jar on its class path, which lacks Netty's codec:
// the flags repeat -cp (java obeys the last one) with nettyJars added.
func (k keys) clientJVMFlags() string {
	return strings.Join([]string{
		"-cp", "/etc/zookeeper/conf:" + zookeeperJar + ":" + nettyJars,
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.keyStore.location=" + k.path("alice.jks"),
		"-Dzookeeper.ssl.keyStore.password=" + storePassword,
		"-Dzookeeper.ssl.trustStore.location=" + k.path("truststore.jks"),
		"-Dzookeeper.ssl.trustStore.password=" + storePassword,
	}, " ")
}

// clientJAAS is the JAAS file of the secured scenarios whose name ends in
// -sasl: a DIGEST-MD5 login as bob, a user of the servers' JAAS file.
const clientJAAS = `Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="bob"
  password="bobsecret";
};
`

// scenarioEnv is the environment a secured scenario program gets on top of
// the runner's; with sasl, the Java client (zkCli) also logs in with
// DIGEST-MD5 through clientJAAS.
func (k keys) scenarioEnv(sasl bool) []string {
	flags := k.clientJVMFlags()
	if sasl {
		flags += " -Djava.security.auth.login.config=" + k.path("client-jaas.conf")
	}
	return []string{keysEnv + "=" + string(k), "CLIENT_JVMFLAGS=" + flags}
}

// secureCfg is what the secured standalone server adds to zooCfg: a
// TLS-only port and the server's keystore.
func (k keys) secureCfg(securePort int) string {
	return strings.Join([]string{
		fmt.Sprintf("secureClientPort=%d", securePort),
		"secureClientPortAddress=127.0.0.1",
		"ssl.keyStore.location=" + k.path("server.p12"),
		"ssl.keyStore.password=" + storePassword,
		"ssl.keyStore.type=PKCS12",
		"",
	}, "\n")
}

// serverJVMProps are the -D properties of a secured server, passed as an
// operator does: on ZooKeeper's java command line, in SERVER_JVMFLAGS for
// zkserverd. ZooKeeper serves TLS only with the Netty connection factory;
// zkserverd accepts and ignores that property.
func (k keys) serverJVMProps() []string {
	return []string{
		"-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"-Dzookeeper.ssl.trustStore.location=" + k.path("truststore.jks"),
		"-Dzookeeper.ssl.trustStore.password=" + storePassword,
		"-Dzookeeper.authProvider.2=org.apache.zookeeper.server.auth.X509AuthenticationProvider",
	}
}

// quorumCfg is what a member of an ensemble with quorum TLS adds to its
// zoo.cfg: TLS between members with the servers' keystore and the suite's
// truststore.
func (k keys) quorumCfg() string {
	return strings.Join([]string{
		"sslQuorum=true",
		"ssl.quorum.keyStore.location=" + k.path("server.p12"),
		"ssl.quorum.keyStore.password=" + storePassword,
		"ssl.quorum.keyStore.type=PKCS12",
		"ssl.quorum.trustStore.location=" + k.path("truststore.jks"),
		"ssl.quorum.trustStore.password=" + storePassword,
		"ssl.quorum.trustStore.type=JKS",
		"",
	}, "\n")
}

// clientTLS is a Go TLS client configuration with the named client
// certificate that trusts the suite's CA and expects a server certificate
// for localhost.
func (k keys) clientTLS(name string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(k.path(name+".pem"), k.path(name+".key"))
	if err != nil {
		return nil, fmt.Errorf("load %s's certificate: %w", name, err)
	}
	ca, err := os.ReadFile(k.path("ca.pem"))
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", k.path("ca.pem"))
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "localhost"}, nil
}
