package tlsconf_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/tlsconf"
	"github.com/zkserverd/zkserverd/tlsconf/tlstest"
)

// fixture is a CA, a server certificate it signed, and their files in
// every keystore format.
type fixture struct {
	dir    string
	ca     *tlstest.Cert
	server *tlstest.Cert
}

func newFixture(t *testing.T) fixture {
	ca := tlstest.NewCA(t, "test CA")
	return fixture{dir: t.TempDir(), ca: ca, server: ca.Issue(t, pkix.Name{CommonName: "server"}, tlstest.Options{})}
}

func TestLoadKeyStore(t *testing.T) {
	f := newFixture(t)
	pwFile := tlstest.WriteFile(t, f.dir, "pw", []byte("s3cret!\n"))
	tests := []struct {
		name  string
		store tlsconf.Store
		data  []byte
	}{
		{"pem by extension", tlsconf.Store{Path: "k.pem"}, f.server.PEMKeyStore(t)},
		{"p12 by extension", tlsconf.Store{Path: "k.p12", Password: "s3cret!"}, f.server.PKCS12KeyStore(t, "s3cret!")},
		{"pfx by extension", tlsconf.Store{Path: "k.pfx", Password: "s3cret!"}, f.server.PKCS12KeyStore(t, "s3cret!")},
		{"jks by extension", tlsconf.Store{Path: "k.jks", Password: "s3cret!"}, f.server.JKSKeyStore(t, "s3cret!")},
		{"type wins over extension", tlsconf.Store{Path: "k.bin", Type: "pkcs12", Password: "pw"}, f.server.PKCS12KeyStore(t, "pw")},
		{"password from passwordPath", tlsconf.Store{Path: "k2.jks", Password: "wrong", PasswordPath: pwFile}, f.server.JKSKeyStore(t, "s3cret!")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.store.Path = tlstest.WriteFile(t, f.dir, tt.store.Path, tt.data)
			cert, err := tlsconf.LoadKeyStore(tt.store)
			if err != nil {
				t.Fatal(err)
			}
			if !cert.Leaf.Equal(f.server.Cert) || len(cert.Certificate) != 2 {
				t.Fatalf("leaf %v with %d certificates, want the server certificate and its CA", cert.Leaf.Subject, len(cert.Certificate))
			}
		})
	}
}

func TestLoadKeyStoreErrors(t *testing.T) {
	f := newFixture(t)
	other := f.ca.Issue(t, pkix.Name{CommonName: "other"}, tlstest.Options{})
	// The server's certificate followed by other's key (other's keystore
	// less its certificate blocks).
	otherKey := other.PEMKeyStore(t)[len(tlstest.PEMTrustStore(other, f.ca)):]
	mismatched := append(tlstest.PEMTrustStore(f.server), otherKey...)
	tests := []struct {
		name  string
		store tlsconf.Store
		data  []byte
	}{
		{"unknown extension", tlsconf.Store{Path: "k.key"}, f.server.PEMKeyStore(t)},
		{"unsupported type", tlsconf.Store{Path: "k.pem", Type: "BCFKS"}, f.server.PEMKeyStore(t)},
		{"wrong p12 password", tlsconf.Store{Path: "k.p12", Password: "nope"}, f.server.PKCS12KeyStore(t, "right")},
		{"wrong jks password", tlsconf.Store{Path: "k.jks", Password: "nope"}, f.server.JKSKeyStore(t, "right")},
		{"pem without key", tlsconf.Store{Path: "k.pem"}, tlstest.PEMTrustStore(f.server)},
		{"pem key of another certificate", tlsconf.Store{Path: "m.pem"}, mismatched},
		{"pkcs1 pem key", tlsconf.Store{Path: "r.pem"}, []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")},
		{"garbage", tlsconf.Store{Path: "g.jks"}, []byte("not a keystore")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.store.Path = tlstest.WriteFile(t, f.dir, tt.store.Path, tt.data)
			if _, err := tlsconf.LoadKeyStore(tt.store); !errors.Is(err, tlsconf.ErrStore) {
				t.Fatalf("err = %v, want ErrStore", err)
			}
		})
	}
	if _, err := tlsconf.LoadKeyStore(tlsconf.Store{Path: filepath.Join(f.dir, "missing.pem")}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: err = %v, want ErrNotExist", err)
	}
}

func TestLoadTrustStore(t *testing.T) {
	f := newFixture(t)
	stranger := tlstest.NewCA(t, "stranger")
	client := f.ca.Issue(t, pkix.Name{CommonName: "client"}, tlstest.Options{})
	tests := []struct {
		name  string
		store tlsconf.Store
		data  []byte
	}{
		{"pem", tlsconf.Store{Path: "t.pem"}, tlstest.PEMTrustStore(f.ca)},
		{"java pkcs12", tlsconf.Store{Path: "t.p12", Password: "pw"}, tlstest.PKCS12TrustStore(t, "pw", f.ca)},
		{"pkcs12 with a key entry", tlsconf.Store{Path: "k.p12", Password: "pw"}, f.server.PKCS12KeyStore(t, "pw")},
		{"jks", tlsconf.Store{Path: "t.jks", Password: "changeit"}, tlstest.JKSTrustStore(t, "changeit", f.ca)},
		{"jks with a key entry", tlsconf.Store{Path: "k.jks", Password: "changeit"}, f.server.JKSKeyStore(t, "changeit")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.store.Path = tlstest.WriteFile(t, f.dir, tt.store.Path, tt.data)
			pool, err := tlsconf.LoadTrustStore(tt.store)
			if err != nil {
				t.Fatal(err)
			}
			opts := x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
			if _, err := client.Cert.Verify(opts); err != nil {
				t.Fatalf("a client of the CA does not verify: %v", err)
			}
			strangeClient := stranger.Issue(t, pkix.Name{CommonName: "x"}, tlstest.Options{})
			if _, err := strangeClient.Cert.Verify(opts); err == nil {
				t.Fatal("a client of another CA verifies")
			}
		})
	}
}

func TestBuild(t *testing.T) {
	f := newFixture(t)
	ks := tlsconf.Store{Path: tlstest.WriteFile(t, f.dir, "k.pem", f.server.PEMKeyStore(t))}
	tests := []struct {
		name       string
		opts       tlsconf.Options
		auth       tls.ClientAuthType
		minV, maxV uint16
		suites     []uint16 // nil: not checked
		notes      int
		wantErr    bool
	}{
		{name: "defaults: need, TLS 1.2", opts: tlsconf.Options{}, auth: tls.RequireAndVerifyClientCert,
			minV: tls.VersionTLS12, maxV: tls.VersionTLS12},
		{name: "want", opts: tlsconf.Options{ClientAuth: "want"}, auth: tls.VerifyClientCertIfGiven,
			minV: tls.VersionTLS12, maxV: tls.VersionTLS12},
		{name: "none, TLSv1.3", opts: tlsconf.Options{ClientAuth: "none", Protocol: "TLSv1.3"}, auth: tls.NoClientCert,
			minV: tls.VersionTLS13, maxV: tls.VersionTLS13},
		{name: "enabled protocols win", opts: tlsconf.Options{Protocol: "TLSv1.3", EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}},
			auth: tls.RequireAndVerifyClientCert, minV: tls.VersionTLS12, maxV: tls.VersionTLS13},
		{name: "java cipher names", opts: tlsconf.Options{CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"}},
			auth: tls.RequireAndVerifyClientCert, minV: tls.VersionTLS12, maxV: tls.VersionTLS12,
			suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}, notes: 1},
		{name: "no usable cipher", opts: tlsconf.Options{CipherSuites: []string{"TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"}}, wantErr: true},
		{name: "bad protocol", opts: tlsconf.Options{Protocol: "SSLv3"}, wantErr: true},
		{name: "bad clientAuth", opts: tlsconf.Options{ClientAuth: "maybe"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.KeyStore = ks
			cfg, notes, err := tlsconf.Build(tt.opts)
			if tt.wantErr {
				if !errors.Is(err, tlsconf.ErrConfig) {
					t.Fatalf("err = %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ClientAuth != tt.auth || cfg.MinVersion != tt.minV || cfg.MaxVersion != tt.maxV || len(notes) != tt.notes {
				t.Fatalf("auth %v versions %x..%x notes %q; want %v %x..%x and %d notes",
					cfg.ClientAuth, cfg.MinVersion, cfg.MaxVersion, notes, tt.auth, tt.minV, tt.maxV, tt.notes)
			}
			if tt.suites != nil && !slices.Equal(cfg.CipherSuites, tt.suites) {
				t.Fatalf("suites %x, want %x", cfg.CipherSuites, tt.suites)
			}
			if cfg.ClientCAs != nil {
				t.Fatal("ClientCAs set without a truststore; want nil (system roots)")
			}
		})
	}
}

func TestReloaderSwapsCertificates(t *testing.T) {
	f := newFixture(t)
	ksPath := tlstest.WriteFile(t, f.dir, "k.p12", f.server.PKCS12KeyStore(t, "pw"))
	pwPath := tlstest.WriteFile(t, f.dir, "pw", []byte("pw"))
	r, _, err := tlsconf.NewReloader(tlsconf.Options{KeyStore: tlsconf.Store{Path: ksPath, PasswordPath: pwPath}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func() *x509.Certificate { return r.Config().Certificates[0].Leaf }
	if r.Check() || !leaf().Equal(f.server.Cert) {
		t.Fatal("Check reloaded unchanged files, or the first certificate is not the server's")
	}
	// A half-written keystore is refused and the old certificate stays.
	tlstest.WriteFile(t, f.dir, "k.p12", []byte("partial"))
	if r.Check() || !leaf().Equal(f.server.Cert) {
		t.Fatal("a broken keystore replaced the working configuration")
	}
	// A new keystore under a new password (both files change) is taken.
	next := f.ca.Issue(t, pkix.Name{CommonName: "server-2"}, tlstest.Options{})
	tlstest.WriteFile(t, f.dir, "k.p12", next.PKCS12KeyStore(t, "pw2"))
	tlstest.WriteFile(t, f.dir, "pw", []byte("pw2"))
	if !r.Check() || !leaf().Equal(next.Cert) {
		t.Fatal("the new keystore was not loaded")
	}
	hello := &tls.ClientHelloInfo{}
	got, err := r.ServerConfig().GetConfigForClient(hello)
	if err != nil || got != r.Config() {
		t.Fatalf("ServerConfig hands out %p (err %v), want the current %p", got, err, r.Config())
	}
}
