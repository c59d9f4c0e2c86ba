package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteQuorumJAAS writes dir/jaas.conf for quorum SASL with DIGEST-MD5 and
// returns its path: the QuorumServer section accepts the member zkpeer with
// serverPassword, and the QuorumLearner section logs in as zkpeer with
// learnerPassword.
func WriteQuorumJAAS(t testing.TB, dir, serverPassword, learnerPassword string) string {
	t.Helper()
	text := `QuorumServer {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_zkpeer="` + serverPassword + `";
};
QuorumLearner {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="zkpeer"
  password="` + learnerPassword + `";
};
`
	path := filepath.Join(dir, "jaas.conf")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
