package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/peernet"
	"github.com/zkserverd/zkserverd/zab"
)

// securedDialTimeout bounds a connection attempt of the mirror when the
// ensemble uses quorum TLS: a ZooKeeper voter's first TLS handshakes can
// take longer than zab's 2 s default.
const securedDialTimeout = 10 * time.Second

// mirrorSecurity is how the mirror connects to the ensemble's voters:
// as a member of that ensemble does, with its quorum TLS and quorum SASL.
// The zero value is plain TCP without a login.
type mirrorSecurity struct {
	network zab.Network     // nil: plain TCP
	auth    *zab.QuorumAuth // nil: no quorum SASL
}

// readMirrorSecurity reads the member-link keys of the ensemble's zoo.cfg
// at path (sslQuorum, portUnification, sslQuorumReloadCertFiles,
// ssl.quorum.*, quorum.auth.*), with the -D properties of SERVER_JVMFLAGS
// and JVMFLAGS under them as for a zkserverd member (the file wins), and
// loads what they name on this host: the quorum keystore and truststore,
// and the QuorumServer and QuorumLearner sections of the JAAS file
// (java.security.auth.login.config).
func readMirrorSecurity(path string, logger *slog.Logger) (mirrorSecurity, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return mirrorSecurity{}, fmt.Errorf("mirror: read the ensemble's configuration: %w", err)
	}
	sys, _ := conf.SystemProperties(os.Environ())
	cfg, _, err := conf.Parse(bytes.NewReader(text), sys...)
	if err != nil {
		return mirrorSecurity{}, fmt.Errorf("mirror: %s: %w", path, err)
	}
	return mirrorSecurityFor(cfg, logger)
}

// mirrorSecurityFor builds the security cfg's quorum keys describe.
func mirrorSecurityFor(cfg conf.Config, logger *slog.Logger) (mirrorSecurity, error) {
	var sec mirrorSecurity
	q := cfg.Quorum
	if q.TLSConfigured() {
		n, err := peernet.NewForZooKeeper(cfg, logger.With("component", "peernet"))
		if err != nil {
			return sec, fmt.Errorf("mirror: quorum TLS: %w", err)
		}
		sec.network = n
	}
	login, err := peernet.LoadQuorumLogin(cfg)
	if err != nil {
		return sec, fmt.Errorf("mirror: quorum SASL: %w", err)
	}
	if login != nil {
		sec.auth = &zab.QuorumAuth{
			Server:        func() zab.SASLServer { return login.NewServer() },
			ServerRequire: login.ServerRequire,
		}
		if login.LearnerRequire {
			sec.auth.Learner = func() zab.SASLClient { return login.NewLearner() }
		}
		logger.Info("mirror: "+login.String(), "jaas", cfg.SASL.JAASConfigFile)
	}
	return sec, nil
}

// apply sets the connections of a zab configuration.
func (s mirrorSecurity) apply(c *zab.Config) {
	if s.network != nil {
		c.Network = s.network
		c.DialTimeout = max(c.DialTimeout, securedDialTimeout)
	}
	c.Auth = s.auth
}
