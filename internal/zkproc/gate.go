package zkproc

import (
	"fmt"
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
	fail, msg := gate(Available(), os.Getenv(RequireEnv))
	switch {
	case fail:
		t.Fatal(msg)
	case msg != "":
		t.Skip(msg)
	}
}

// gate decides what Require does with Available's answer and the
// variable's value: nothing (msg ""), skip, or fail.
func gate(unavailable error, env string) (fail bool, msg string) {
	if unavailable == nil {
		return false, ""
	}
	if env == "1" {
		return true, fmt.Sprintf("%s=1 but ZooKeeper cannot be launched: %v", RequireEnv, unavailable)
	}
	return false, fmt.Sprintf("ZooKeeper cannot be launched (%v); set %s=1 to fail instead", unavailable, RequireEnv)
}
