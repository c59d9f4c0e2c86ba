package watch

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports enforces docs/architecture.md's dependency rule: watch imports only
// jute and the standard library.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Imports) == 0 {
		t.Fatal("no imports found; the check would pass vacuously")
	}
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		if imp != "github.com/zkserverd/zkserverd/jute" && strings.Contains(first, ".") {
			t.Errorf("watch imports %s; only jute and the standard library are allowed", imp)
		}
	}
}
