package test

import (
	"os/exec"
	"strings"
	"testing"
)

// allowedImports lists, for each package, the project packages it may
// import (docs/architecture.md). Anything else is a layering violation.
var allowedImports = map[string][]string{
	"jute":              {},
	"conf":              {},
	"acl":               {"jute"},
	"watch":             {"jute"},
	"session":           {"jute"},
	"datatree":          {"jute", "acl"},
	"txnlog":            {"jute", "datatree", "session"},
	"replication":       {"jute", "datatree", "session", "txnlog"},
	"server":            {"jute", "datatree", "session", "txnlog", "replication", "acl", "watch", "conf", "tlsconf", "sasl", "peernet"},
	"peernet":           {"conf", "tlsconf", "sasl"},
	"server/ops":        {"jute", "datatree", "session", "txnlog", "replication", "watch", "conf", "server", "acl", "internal/zkimport"},
	"cmd/zkserverd":     {"conf", "server", "server/ops", "internal/zkimport", "zab", "mirror", "replication", "datatree", "peernet"}, // replication, datatree: the takeover seeds a mirror's state (takeover_member.go); peernet: the mirror's quorum TLS and SASL (mirror_security.go)
	"zab":               {"jute"},
	"mirror":            {"jute", "acl", "datatree", "session", "internal/zkimport", "txnlog", "replication"}, // txnlog, replication: a Replica serves a server (replica.go)
	"internal/zkproc":   {"internal/testutil", "internal/procgroup"},                                          // procgroup: each member's JVM runs in a process group of its own
	"internal/zkimport": {"jute", "datatree", "session", "replication"},
	"server/servertest": {"server", "server/ops"},
	"internal/testutil": {"conf", "internal/fourletter"}, // fourletter: FourLetter forwards to the client the compat runner shares
	"internal/bench":    {"jute"},
	"cmd/zkbench":       {"internal/bench"},
	"test/ports":        {},
	"tlsconf":           {"conf"},
	"sasl":              {},
	"tlsconf/tlstest":   {},

	"internal/procgroup":  {},
	"internal/fourletter": {},
}

func TestDependencyDirection(t *testing.T) {
	const module = "github.com/zkserverd/zkserverd/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", "../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		pkg = strings.TrimPrefix(pkg, module)
		allowed, known := allowedImports[pkg]
		if !known {
			continue // test-only and tool packages
		}
		for _, imp := range strings.Fields(imports) {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			ok := false
			for _, a := range allowed {
				ok = ok || a == dep
			}
			if !ok {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow", pkg, dep)
			}
		}
	}
}
