package conf

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"datadir", "datadir", 0},
		{"dtadir", "datadir", 1},      // deletion
		{"datadirr", "datadir", 1},    // insertion
		{"dataDor", "dataDir", 1},     // substitution
		{"dtaadir", "datadir", 1},     // swap of neighbours
		{"ticktme", "ticktime", 1},    //
		{"ca", "abc", 3},              // optimal string alignment, not Damerau
		{"snapcount", "snapCount", 1}, // case counts here; suggestKey folds it
		{"héllo", "hello", 1},         // runes, not bytes
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestSuggestKey(t *testing.T) {
	tests := []struct{ key, want string }{
		{"dataDIr", "dataDir"},
		{"datadir", "dataDir"},
		{"dataDirr", "dataDir"},
		{"dtaDir", "dataDir"},
		{"tickTme", "tickTime"},
		{"clientport", "clientPort"},
		{"maxClientCnxn", "maxClientCnxns"},
		{"zookeeper.snapcount", "zookeeper.snapCount"},
		{"4lw.commands.whitelst", "4lw.commands.whitelist"},
		{"sever.3", "server.3"},
		{"authprovider.1", "authProvider.1"},
		{"jion", "join"},            // one edit in a short key
		{"dataDir", ""},             // known
		{"server.12", ""},           // known family
		{"zookeeper.snapCount", ""}, // known, prefixed
		{"xyz", ""},
		{"jxxn", ""},                // two edits in a short key: too far
		{"completelyDifferent", ""}, //
	}
	for _, tt := range tests {
		if got := suggestKey(tt.key); got != tt.want {
			t.Errorf("suggestKey(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
	if got := caseSuggestion("ssl.keystore.location"); got != "ssl.keyStore.location" {
		t.Errorf("caseSuggestion(ssl.keystore.location) = %q", got)
	}
	// A key accepted by its prefix may be a real ZooKeeper key close to a
	// known one: only a case mistake is pointed out.
	if got := caseSuggestion("metricsProvider.httpHosts"); got != "" {
		t.Errorf("caseSuggestion(metricsProvider.httpHosts) = %q, want none", got)
	}
}

// TestKnownKeysComplete checks knownKeys against the parser's source: every
// key a switch on the key (or on its name without "zookeeper.") names is
// listed, and every listed key parses without an unknown-key warning.
func TestKnownKeysComplete(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	// The functions that switch on a key; setTLSKey's cases follow "ssl."
	// or "ssl.quorum.".
	funcs := map[string][]string{
		"setQuorumKey": {""}, "setPropertyKey": {""}, "setSSLKey": {""}, "setSASLKey": {""},
		"setQuorumSecurityKey": {""}, "knownUninterpreted": {""}, "ignoredSecurityKey": {""},
		"checkRefusedSecurityKey": {""}, "setTLSKey": {"ssl.", "ssl.quorum."},
	}
	fset := token.NewFileSet()
	var fromSource []string
	seen := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || funcs[fn.Name.Name] == nil {
				continue
			}
			prefixes := funcs[fn.Name.Name]
			seen[fn.Name.Name] = true
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sw, ok := n.(*ast.SwitchStmt)
				if !ok {
					return true
				}
				tag, ok := sw.Tag.(*ast.Ident)
				if !ok || (tag.Name != "key" && tag.Name != "name") {
					return true
				}
				for _, stmt := range sw.Body.List {
					for _, e := range stmt.(*ast.CaseClause).List {
						lit, ok := e.(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						v, _ := strconv.Unquote(lit.Value)
						for _, p := range prefixes {
							fromSource = append(fromSource, p+v)
						}
					}
				}
				return true
			})
		}
	}
	for fn := range funcs {
		if !seen[fn] {
			t.Errorf("function %s not found in the package: update this test", fn)
		}
	}
	if len(fromSource) < 100 {
		t.Fatalf("only %d keys found in the source", len(fromSource))
	}
	for _, k := range fromSource {
		if !slices.Contains(knownKeys, k) {
			t.Errorf("key %q is handled by the parser but missing from knownKeys", k)
		}
	}
	for _, k := range knownKeys {
		value := "1"
		switch k {
		case "dataDir", "dataLogDir", "clientPortAddress", "secureClientPortAddress", "peerType":
			value = "participant"
		case "logStore":
			value = "wal"
		case "ssl.crl", "ssl.ocsp", "ssl.quorum.crl", "ssl.quorum.ocsp", "DigestAuthenticationProvider.enabled",
			"DigestAuthenticationProvider.digestAlg", "ssl.context.supplier.class", "ssl.quorum.context.supplier.class":
			value = ""
		}
		_, warnings, err := Parse(strings.NewReader(k + "=" + value))
		for _, w := range warnings {
			if strings.Contains(w, "unknown key") {
				t.Errorf("listed key %q: %s", k, w)
			}
		}
		_ = err // values are not the point; a bad value is still a known key
	}
}
