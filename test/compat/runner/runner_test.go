package main

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestNormalizeGolden checks the transcript normalization against a golden
// pair under testdata/ (zkCli, cli_mt and kazoo shapes of zxids, session
// ids, dates and ports).
func TestNormalizeGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/normalize.in.txt")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/normalize.out.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := normalize(string(in))
	if got != string(want) {
		for _, h := range diffLines(splitLines(string(want)), splitLines(got)) {
			t.Errorf("at line %d: want %q, got %q", h.at, h.left, h.right)
		}
	}
}

// TestNormalizeKeepsDifferences makes sure normalization does not hide
// what the comparison is for.
func TestNormalizeKeepsDifferences(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"equal zxids vs different zxids", "cZxid = 0x5\nmZxid = 0x5\n", "cZxid = 0x5\nmZxid = 0x6\n"},
		{"zero owner vs session owner", "ephemeralOwner = 0x0\n", "ephemeralOwner = 0x10000\n"},
		{"epoch vs real date", "ctime = Thu Jan 01 00:00:00 UTC 1970\n", "ctime = Sun Nov 22 06:30:51 UTC 2026\n"},
		{"C client epoch vs real date", "ctime = Thu Jan  1 00:00:00 1970\n", "ctime = Thu Dec  3 18:52:03 2026\n"},
		{"cversion", "cversion = -2\n", "cversion = 0\n"},
		{"sequence suffix", "Created /s-0000000001\n", "Created /s-0000000002\n"},
		{"list items", "| [a, b]\n", "| [a, c]\n"},
		{"server role", "server.4=127.0.0.1:9001:9002:observer;127.0.0.1:9003\n",
			"server.4=127.0.0.1:9001:9002:participant;127.0.0.1:9003\n"},
		{"server without client address", "server.4=127.0.0.1:9001:9002:observer;127.0.0.1:9003\n",
			"server.4=127.0.0.1:9001:9002:observer\n"},
		{"server id", "server.4=127.0.0.1:9001:9002:observer\n", "server.5=127.0.0.1:9001:9002:observer\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if normalize(tt.a) == normalize(tt.b) {
				t.Errorf("normalize made %q and %q equal: %q", tt.a, tt.b, normalize(tt.a))
			}
		})
	}
}

func TestNormalizeHidesRunSpecificValues(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"zxid offset", "cZxid = 0x5\nmZxid = 0x7\npZxid = 0x5\n", "cZxid = 0x25\nmZxid = 0x30\npZxid = 0x25\n"},
		{"session ids", "ephemeralOwner = 0x1000020a02b0003\n", "ephemeralOwner = 0x1a201f168050002\n"},
		{"port", "Connecting to 127.0.0.1:21810\n", "Connecting to 127.0.0.1:40001\n"},
		{"server line ports", "server.1=127.0.0.1:9001:9002:participant;127.0.0.1:9003\n",
			"server.1=127.0.0.1:9101:9102:participant;127.0.0.1:9103\n"},
		{"C client date", "\tctime = Thu Dec  3 18:52:02 2026\n", "\tctime = Thu Dec  3 18:52:03 2026\n"},
		{"millis", "ctime=1795329374788\n", "ctime=1795329375066\n"},
		{"list order", "| [/a/e2, /a/e1]\n", "| [/a/e1, /a/e2]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if x, y := normalize(tt.a), normalize(tt.b); x != y {
				t.Errorf("still different after normalize: %q vs %q", x, y)
			}
		})
	}
}

func TestDiffLines(t *testing.T) {
	tests := []struct {
		name string
		a, b []string
		want []hunk
	}{
		{"same", []string{"x", "y"}, []string{"x", "y"}, nil},
		{"changed line", []string{"x", "y", "z"}, []string{"x", "Y", "z"},
			[]hunk{{at: 2, left: []string{"y"}, right: []string{"Y"}}}},
		{"only left", []string{"x", "y"}, []string{"x"},
			[]hunk{{at: 2, left: []string{"y"}}}},
		{"only right at start", []string{"x"}, []string{"w", "x"},
			[]hunk{{at: 1, right: []string{"w"}}}},
		{"moved line", []string{"a", "b", "c"}, []string{"b", "a", "c"},
			[]hunk{{at: 1, left: []string{"a"}}, {at: 3, right: []string{"a"}}}},
		{"empty left", nil, []string{"x"}, []hunk{{at: 1, right: []string{"x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diffLines(tt.a, tt.b)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diffLines(%q, %q) = %+v, want %+v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestSideBySide(t *testing.T) {
	got := sideBySide(hunk{left: []string{"abcdef"}, right: []string{"x", "y"}}, 4)
	want := "      abc… | x\n" +
		"           | y\n"
	if got != want {
		t.Errorf("sideBySide =\n%q\nwant\n%q", got, want)
	}
}

const sampleAllowlist = `# comment
scenario zkcli/.*
zookeeper ^\| digest: bob$
zkserverd ^\| digest: bob$
reason auth ids come in hash-set order

scenario kazoo/fourletter
zkserverd ^mntr key zk_extra$
reason zkserverd adds zk_extra
`

func TestParseAllowlist(t *testing.T) {
	list, err := parseAllowlist(strings.NewReader(sampleAllowlist))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("got %d entries, want 2", len(list))
	}
	if list[0].line != 2 || list[1].line != 7 {
		t.Errorf("entry lines = %d, %d; want 2, 7", list[0].line, list[1].line)
	}
	if !list[0].scenario.MatchString("zkcli/acl-auth") || list[0].scenario.MatchString("xzkcli/acl") {
		t.Errorf("scenario pattern %v is not anchored", list[0].scenario)
	}
	if len(list[1].zookeeper) != 0 || len(list[1].zkserverd) != 1 {
		t.Errorf("second entry patterns: %d zookeeper, %d zkserverd", len(list[1].zookeeper), len(list[1].zkserverd))
	}
}

func TestParseAllowlistErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"no reason", "scenario a\nzookeeper x\n", "no reason"},
		{"no scenario", "zookeeper x\nreason r\n", "no scenario"},
		{"no pattern", "scenario a\nreason r\n", "no zookeeper or zkserverd pattern"},
		{"bad regexp", "scenario a\nzookeeper (\nreason r\n", "missing closing )"},
		{"unknown key", "scenario a\nzookeper x\nreason r\n", `unknown key "zookeper"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseAllowlist(strings.NewReader(tt.text))
			if err == nil || !errors.Is(err, errAllowlist) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestCheckReasons(t *testing.T) {
	list, err := parseAllowlist(strings.NewReader(sampleAllowlist))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkReasons(list, "| auth ids come in hash-set order | ... |\nzkserverd adds zk_extra\n"); err != nil {
		t.Errorf("documented reasons rejected: %v", err)
	}
	err = checkReasons(list, "only auth ids come in hash-set order here")
	if err == nil || !strings.Contains(err.Error(), "zkserverd adds zk_extra") {
		t.Errorf("undocumented reason not reported: %v", err)
	}
}

func TestAllowed(t *testing.T) {
	list, err := parseAllowlist(strings.NewReader(sampleAllowlist))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		scenario string
		h        hunk
		ok       bool
	}{
		{"both sides covered", "zkcli/acl-auth", hunk{left: []string{"| digest: bob"}, right: []string{"| digest: bob"}}, true},
		{"other scenario", "kazoo/acl", hunk{left: []string{"| digest: bob"}}, false},
		{"uncovered extra line", "zkcli/acl-auth", hunk{left: []string{"| digest: bob", "| other"}}, false},
		{"wrong side", "kazoo/fourletter", hunk{left: []string{"mntr key zk_extra"}}, false},
		{"right side only", "kazoo/fourletter", hunk{right: []string{"mntr key zk_extra"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reasons := allowed(list, tt.scenario, tt.h)
			if ok != tt.ok {
				t.Errorf("allowed = %v, want %v", ok, tt.ok)
			}
			if ok && len(reasons) != 1 {
				t.Errorf("reasons = %q, want one", reasons)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	if _, err := parseFlags([]string{"-mode", "nope"}); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, err := parseFlags([]string{"-run", "("}); err == nil {
		t.Error("bad -run regexp accepted")
	}
	o, err := parseFlags([]string{"-mode", "diff", "-run", "kazoo/.*"})
	if err != nil {
		t.Fatal(err)
	}
	if o.mode != modeDiff || !o.run.MatchString("kazoo/lock") || o.run.MatchString("go/lock") {
		t.Errorf("parsed %+v", o)
	}
}

func TestJudge(t *testing.T) {
	failed := outcome{err: errors.New("exit status 1")}
	tests := []struct {
		name    string
		ok      bool
		results []outcome
		want    verdict
	}{
		{"both pass, same transcripts", true, []outcome{{}, {}}, verdictPass},
		{"both pass, transcripts differ", false, []outcome{{}, {}}, verdictFail},
		{"only the server under test fails", false, []outcome{{}, failed}, verdictFail},
		{"the reference fails", false, []outcome{failed, {}}, verdictReferenceFails},
		{"both fail", false, []outcome{failed, failed}, verdictReferenceFails},
		{"one kind fails", false, []outcome{failed}, verdictFail},
		{"one kind passes", true, []outcome{{}}, verdictPass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judge(tt.ok, tt.results); got != tt.want {
				t.Errorf("judge = %v, want %v", got, tt.want)
			}
		})
	}
}
