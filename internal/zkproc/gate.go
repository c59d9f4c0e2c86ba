package zkproc

import (
	"os"
	"testing"
)

// RequireEnv names the variable that turns a missing ZooKeeper from a
// skip into a failure (CI sets it where ZooKeeper must be tested).
const RequireEnv = "ZKSERVERD_REQUIRE_ZOOKEEPER"

// Require skips t when ZooKeeper cannot be launched here, or fails it
// with the reason when RequireEnv is 1.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 but ZooKeeper cannot be launched: %v", RequireEnv, err)
		}
		t.Skipf("ZooKeeper cannot be launched (%v); set %s=1 to fail instead", err, RequireEnv)
	}
}
