package datatree

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// Data-driven scripts: testdata/*.txt hold blocks of
//
//	command args...        (a multi takes one op per following line)
//	----
//	expected output
//	<blank line>
//
// Run `go test ./datatree -run TestScripts -rewrite` to regenerate the
// expected output, then review the diff before committing it.

var rewrite = flag.Bool("rewrite", false, "rewrite golden files in testdata")

// checkGolden compares got with the golden file, or rewrites it.
func checkGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *rewrite {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", file, got, want)
	}
}

type scriptBlock struct {
	comments []string // comment lines before the block
	cmds     []string
	want     string
}

func parseScript(t *testing.T, text string) []scriptBlock {
	var blocks []scriptBlock
	var comments []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); {
		if line := strings.TrimSpace(lines[i]); line == "" || strings.HasPrefix(line, "#") {
			if line != "" {
				comments = append(comments, line)
			}
			i++
			continue
		}
		b := scriptBlock{comments: comments}
		comments = nil
		for i < len(lines) && lines[i] != "----" {
			b.cmds = append(b.cmds, lines[i])
			i++
		}
		if i == len(lines) {
			t.Fatalf("block %q has no ---- line", b.cmds)
		}
		i++
		var out []string
		for i < len(lines) && lines[i] != "" {
			out = append(out, lines[i])
			i++
		}
		b.want = strings.Join(out, "\n")
		blocks = append(blocks, b)
	}
	return blocks
}

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s := &script{t: t}
			var out strings.Builder
			for _, b := range parseScript(t, string(text)) {
				for _, c := range b.comments {
					out.WriteString(c + "\n")
				}
				got := strings.TrimRight(s.run(b.cmds), "\n")
				if !*rewrite && got != b.want {
					t.Errorf("%s:\n%s\n--- got\n%s\n--- want\n%s", file, strings.Join(b.cmds, "\n"), got, b.want)
				}
				fmt.Fprintf(&out, "%s\n----\n%s\n\n", strings.Join(b.cmds, "\n"), got)
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// script runs commands against one tree; the first command may be
// `config [extended] [auth]`.
type script struct {
	t *testing.T
	h *harness
}

func (s *script) tree() *harness {
	if s.h == nil {
		s.h = newHarness(s.t, Config{})
	}
	return s.h
}

// parseArgs splits "cmd k=v k=v path" into the command, its options and
// the trailing positional argument.
func parseArgs(line string) (cmd string, opts map[string]string, pos string) {
	fields := strings.Fields(line)
	opts = map[string]string{}
	if len(fields) == 0 {
		return "", opts, ""
	}
	cmd = fields[0]
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok && !strings.HasPrefix(f, "/") {
			opts[k] = v
			continue
		}
		pos = f
	}
	if p, ok := opts["path"]; ok {
		pos = p // for paths that need quoting, e.g. path=""
	}
	return cmd, opts, unquote(pos)
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

func optInt(opts map[string]string, k string, def int64) int64 {
	v, ok := opts[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		panic(fmt.Sprintf("bad %s=%q", k, v))
	}
	return n
}

func optData(opts map[string]string) []byte {
	v, ok := opts["data"]
	if !ok || v == "null" {
		return nil
	}
	if v == `""` {
		return []byte{}
	}
	return []byte(unquote(v))
}

// optACL parses acl=scheme:id:perms,... ("none" for an empty list).
func optACL(opts map[string]string) []jute.ACL {
	v, ok := opts["acl"]
	if !ok {
		return open
	}
	if v == "none" {
		return []jute.ACL{}
	}
	var out []jute.ACL
	for _, e := range strings.Split(v, ",") {
		i, j := strings.Index(e, ":"), strings.LastIndex(e, ":")
		perms, err := strconv.Atoi(e[j+1:])
		if err != nil {
			panic("bad acl " + e)
		}
		out = append(out, jute.ACL{Perms: int32(perms), ID: jute.ID{Scheme: e[:i], ID: e[i+1 : j]}})
	}
	return out
}

func optIDs(opts map[string]string) []jute.ID {
	v, ok := opts["ids"]
	if !ok {
		return nil
	}
	var out []jute.ID
	for _, e := range strings.Split(v, ",") {
		scheme, id, _ := strings.Cut(e, ":")
		out = append(out, jute.ID{Scheme: scheme, ID: id})
	}
	return out
}

var createOps = map[string]jute.OpCode{
	"create": jute.OpCreate, "create2": jute.OpCreate2, "container": jute.OpCreateContainer, "ttl": jute.OpCreateTTL,
}

// writeOp turns a write command line into a multi op.
func writeOp(line string) (jute.MultiOp, map[string]string) {
	cmd, opts, path := parseArgs(line)
	v := int32(optInt(opts, "v", -1))
	if op, ok := createOps[cmd]; ok {
		flags := jute.CreateMode(optInt(opts, "flags", 0))
		if op == jute.OpCreateTTL {
			return jute.MultiOp{Type: op, Request: &jute.CreateTTLRequest{Path: path, Data: optData(opts),
				ACL: optACL(opts), Flags: flags, TTL: optInt(opts, "ttl", -1)}}, opts
		}
		return jute.MultiOp{Type: op, Request: &jute.CreateRequest{Path: path, Data: optData(opts), ACL: optACL(opts), Flags: flags}}, opts
	}
	switch cmd {
	case "delete":
		return jute.MultiOp{Type: jute.OpDelete, Request: &jute.DeleteRequest{Path: path, Version: v}}, opts
	case "set":
		return jute.MultiOp{Type: jute.OpSetData, Request: &jute.SetDataRequest{Path: path, Data: optData(opts), Version: v}}, opts
	case "setacl":
		return jute.MultiOp{Type: jute.OpSetACL, Request: &jute.SetACLRequest{Path: path, ACL: optACL(opts), Version: v}}, opts
	case "check":
		return jute.MultiOp{Type: jute.OpCheck, Request: &jute.CheckVersionRequest{Path: path, Version: v}}, opts
	case "reap":
		return jute.MultiOp{Type: jute.OpDeleteContainer, Request: &jute.PathRequest{Path: path}}, opts
	}
	return jute.MultiOp{}, nil
}

func (s *script) run(cmds []string) string {
	cmd, opts, path := parseArgs(cmds[0])
	switch cmd {
	case "config":
		cfg := Config{ExtendedTypesEnabled: strings.Contains(cmds[0], "extended")}
		if strings.Contains(cmds[0], "auth") {
			cfg.Authorizer = testAuth{}
		}
		s.h = newHarness(s.t, cfg)
		return "ok"
	case "multi", "close", "session":
		return s.write(cmds, opts)
	}
	if _, o := writeOp(cmds[0]); o != nil {
		return s.write(cmds, opts)
	}
	return s.read(cmd, opts, path)
}

func (s *script) write(cmds []string, opts map[string]string) string {
	h := s.tree()
	h.ids = optIDs(opts)
	h.sess = optInt(opts, "session", 0x100)
	cmd := strings.Fields(cmds[0])[0]
	var res *Result
	switch cmd {
	case "multi":
		req := &jute.MultiRequest{}
		for _, line := range cmds[1:] {
			op, _ := writeOp(strings.TrimSpace(line))
			req.Ops = append(req.Ops, op)
		}
		res = h.apply(jute.OpMulti, req)
	case "close":
		res = h.apply(jute.OpCloseSession, nil)
	case "session":
		res = h.apply(jute.OpCreateSession, nil)
	default:
		op, _ := writeOp(cmds[0])
		res = h.apply(op.Type, op.Request)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "zxid=%d err=%s", h.zxid, res.Err.String())
	if res.Response != nil {
		b.WriteString(" " + describe(res.Response))
	}
	for _, e := range res.Events {
		fmt.Fprintf(&b, "\n  event %v %s", e.Type, e.Path)
	}
	return b.String()
}

func describe(r jute.Record) string {
	switch r := r.(type) {
	case *jute.CreateResponse:
		return "path=" + r.Path
	case *jute.Create2Response:
		return "path=" + r.Path + " " + fmtStat(r.Stat)
	case *jute.StatResponse:
		return fmtStat(r.Stat)
	case *jute.MultiResponse:
		var b strings.Builder
		b.WriteString("results:")
		for _, res := range r.Results {
			if res.Type == jute.OpError {
				fmt.Fprintf(&b, "\n  error %s", res.Err.String())
				continue
			}
			fmt.Fprintf(&b, "\n  %v", res.Type)
			if res.Response != nil {
				b.WriteString(" " + describe(res.Response))
			}
		}
		return b.String()
	}
	return fmt.Sprintf("%T", r)
}

func fmtStat(st jute.Stat) string {
	return fmt.Sprintf("czxid=%d mzxid=%d pzxid=%d ctime=%d mtime=%d version=%d cversion=%d aversion=%d owner=%#x len=%d children=%d",
		st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, st.Mtime, st.Version, st.Cversion, st.Aversion, st.EphemeralOwner, st.DataLength, st.NumChildren)
}

func (s *script) read(cmd string, opts map[string]string, path string) string {
	tree := s.tree().tree
	ids := optIDs(opts)
	switch cmd {
	case "stat":
		st, code := tree.Exists(path, nil)
		if code != jute.OK {
			return code.String()
		}
		return fmtStat(st)
	case "get":
		data, st, code := tree.GetData(path, ids, nil)
		if code != jute.OK {
			return code.String()
		}
		if data == nil {
			return "data=null " + fmtStat(st)
		}
		return fmt.Sprintf("data=%q %s", data, fmtStat(st))
	case "ls":
		kids, _, code := tree.GetChildren(path, ids, nil)
		if code != jute.OK {
			return code.String()
		}
		slices.Sort(kids)
		return fmt.Sprint(kids)
	case "getacl":
		acl, _, code := tree.GetACL(path, ids)
		if code != jute.OK {
			return code.String()
		}
		return fmt.Sprint(acl)
	case "count":
		n, code := tree.GetAllChildrenNumber(path, ids)
		if code != jute.OK {
			return code.String()
		}
		return strconv.Itoa(int(n))
	case "ephemerals":
		return fmt.Sprint(tree.GetEphemerals(optInt(opts, "session", 0x100), unquote(opts["prefix"])))
	case "counts":
		return fmt.Sprintf("nodes=%d ephemerals=%d datasize=%d containers=%d ttls=%d",
			tree.NodeCount(), tree.EphemeralCount(), tree.ApproximateDataSize(), len(tree.containers), len(tree.ttls))
	case "tree":
		return dumpTree(tree)
	}
	s.t.Fatalf("unknown command %q", cmd)
	return ""
}

func dumpTree(tree *Tree) string {
	paths := make([]string, 0, tree.NodeCount())
	for p := range allNodes(tree) {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var b strings.Builder
	for _, p := range paths {
		st, _ := tree.Exists(p, nil)
		fmt.Fprintf(&b, "%s %s\n", p, fmtStat(st))
	}
	return b.String()
}
