package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (path -> content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCheck(t *testing.T) {
	base := map[string]string{
		"docs/ops.md":         "# Operations\n\n## 3 Backups\n",
		"pkg/helper.go":       "package pkg\n",
		"other/deep/thing.go": "package deep\n",
		"pkg/testdata/v.txt":  "x",
	}
	tests := []struct {
		name    string
		comment string
		bad     string // a part of the problem reported, "" for none
	}{
		{"same directory", "// see helper.go", ""},
		{"from the root", "// see docs/ops.md", ""},
		{"path suffix", "// see deep/thing.go", ""},
		{"bare name elsewhere", "// see thing.go", ""},
		{"testdata file", "// follows testdata/v.txt", ""},
		{"numbered section", "// docs/ops.md §3 says so", ""},
		{"allowed name", "// written to zoo.cfg", ""},
		{"missing file", "// see semantics.md", `"semantics.md" is not in the repository`},
		{"missing path", "// see docs/gone.md", `"docs/gone.md" is not in the repository`},
		{"missing section", "// ops.md §8", `"ops.md" has no section 8`},
		{"block comment", "/* see wire.md */", `"wire.md" is not in the repository`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"pkg/code.go": "package pkg\n\n" + tt.comment + "\nfunc F() {}\n"}
			for k, v := range base {
				files[k] = v
			}
			root := writeTree(t, files)
			listed, err := trackedFiles(root)
			if err != nil {
				t.Fatal(err)
			}
			problems := check(root, listed)
			switch {
			case tt.bad == "" && len(problems) > 0:
				t.Fatalf("problems %q, want none", problems)
			case tt.bad != "" && (len(problems) != 1 || !strings.Contains(problems[0], tt.bad)):
				t.Fatalf("problems %q, want one naming %s", problems, tt.bad)
			}
		})
	}
}
