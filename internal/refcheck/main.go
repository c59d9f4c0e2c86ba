// Command refcheck fails when a comment in the repository's Go files
// names a file the repository does not hold: every reference a reader
// follows must resolve inside the repository. `make lint` runs it.
//
// A reference is a word in a // or /* */ comment that ends in one of
// refExtensions. It resolves when it names a tracked file by its path from
// the repository root, by its path from the commenting file's directory,
// by a path suffix of a tracked file, or, for a bare file name, by the
// name of any tracked file. A "§N" after a Markdown reference must name a
// heading numbered N in that file. Names of files that exist only outside
// the repository by design (ZooKeeper's configuration file, raft's
// snapshot metadata, ZooKeeper's scripts) are listed in allowed.
//
// Usage: go run ./internal/refcheck [dir]   (default: the current directory)
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// refPattern finds a reference and an optional section after it.
var refPattern = regexp.MustCompile(`([A-Za-z0-9_.\-/]+\.(?:go|md|txt|hex|sh|yml|yaml|json|cfg|jute|java|py))\b(\s*§\s*([0-9]+(?:\.[0-9]+)*))?`)

// allowed names files that are not the repository's by design, with why.
var allowed = map[string]string{
	"zoo.cfg":              "ZooKeeper's configuration file, an operator's",
	"meta.json":            "raft's snapshot metadata, written at run time",
	"zkServer.sh":          "Apache ZooKeeper's script",
	"zkCli.sh":             "Apache ZooKeeper's client script",
	"zookeeper.jute":       "Apache ZooKeeper's record definitions, in its source",
	"docker-entrypoint.sh": "the official ZooKeeper image's entrypoint script",
}

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	files, err := trackedFiles(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "refcheck:", err)
		os.Exit(2)
	}
	problems := check(root, files)
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("refcheck: %d comment reference(s) to files the repository lacks\n", len(problems))
		os.Exit(1)
	}
}

// trackedFiles lists the repository's files (git ls-files), falling back
// to a walk of root outside a git checkout.
func trackedFiles(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err == nil {
		return strings.Fields(string(out)), nil
	}
	var files []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	return files, err
}

// repo answers whether references resolve.
type repo struct {
	root  string
	paths map[string]bool
	names map[string]bool
	files []string
}

func newRepo(root string, files []string) *repo {
	r := &repo{root: root, paths: map[string]bool{}, names: map[string]bool{}, files: files}
	for _, f := range files {
		r.paths[f] = true
		r.names[filepath.Base(f)] = true
	}
	return r
}

// check returns one line per unresolved reference in the Go files.
func check(root string, files []string) []string {
	r := newRepo(root, files)
	var problems []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.Contains(f, "/testdata/") {
			continue
		}
		problems = append(problems, r.checkFile(f)...)
	}
	return problems
}

func (r *repo) checkFile(file string) []string {
	fset := token.NewFileSet()
	parsed, err := parser.ParseFile(fset, filepath.Join(r.root, file), nil, parser.ParseComments)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", file, err)}
	}
	var problems []string
	for _, group := range parsed.Comments {
		for _, c := range group.List {
			for _, p := range r.checkComment(file, c) {
				problems = append(problems, fmt.Sprintf("%s: %s", fset.Position(c.Pos()), p))
			}
		}
	}
	return problems
}

func (r *repo) checkComment(file string, c *ast.Comment) []string {
	var problems []string
	for _, m := range refPattern.FindAllStringSubmatch(c.Text, -1) {
		ref, section := strings.TrimRight(m[1], "."), m[3]
		if _, ok := allowed[filepath.Base(ref)]; ok {
			continue
		}
		target, ok := r.resolve(filepath.Dir(file), ref)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%q is not in the repository", ref))
		case section != "" && !r.hasSection(target, section):
			problems = append(problems, fmt.Sprintf("%q has no section %s", ref, section))
		}
	}
	return problems
}

// resolve returns the tracked file ref names, seen from dir.
func (r *repo) resolve(dir, ref string) (string, bool) {
	ref = strings.TrimPrefix(ref, "./")
	for _, p := range []string{ref, filepath.ToSlash(filepath.Join(dir, ref))} {
		if r.paths[p] {
			return p, true
		}
	}
	if !strings.Contains(ref, "/") {
		for _, f := range r.files {
			if filepath.Base(f) == ref && filepath.Dir(f) == dir {
				return f, true
			}
		}
		for _, f := range r.files {
			if filepath.Base(f) == ref {
				return f, true
			}
		}
		return "", false
	}
	for _, f := range r.files {
		if strings.HasSuffix(f, "/"+ref) {
			return f, true
		}
	}
	return "", false
}

// hasSection reports whether a Markdown file has a heading numbered n.
func (r *repo) hasSection(file, n string) bool {
	f, err := os.Open(filepath.Join(r.root, file))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		heading := strings.TrimLeft(s.Text(), "#")
		if len(heading) < len(s.Text()) && strings.HasPrefix(strings.TrimSpace(heading), n+" ") ||
			strings.HasPrefix(strings.TrimSpace(heading), n+". ") && len(heading) < len(s.Text()) {
			return true
		}
	}
	return false
}
