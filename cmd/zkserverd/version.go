package main

import (
	"runtime"
	"runtime/debug"

	"github.com/zkserverd/zkserverd/server"
)

// commit is the source revision the binary was built from, set at link
// time by `make release` (-X main.commit=...). Unset, it is read from the
// build information Go records for a build inside a git checkout, and
// "unknown" without that (go run records none).
var commit = ""

// buildCommit returns commit, or the revision Go recorded at build time
// (with "-dirty" when the checkout had changes), or "unknown".
func buildCommit() string {
	if commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev == "":
		return "unknown"
	case dirty:
		return rev + "-dirty"
	}
	return rev
}

// versionLine is what `zkserverd version` and `zkserverd --version` print:
// the version srvr reports (server.Version), the commit, the build date
// (server.BuildDate) and the Go release.
func versionLine() string {
	return "zkserverd " + server.Version + ", commit " + buildCommit() + ", built on " + server.BuildDate + " (" + runtime.Version() + ")"
}
