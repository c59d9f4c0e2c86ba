package sasl

import (
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"
)

// testProps are the system properties of the JAAS tests.
var testProps = Properties{"user.home": "/home/zk", "zk.host": "zk1.example.com", "empty": ""}

func TestParseJAAS(t *testing.T) {
	digest := "org.apache.zookeeper.server.auth.DigestLoginModule"
	tests := []struct {
		name  string
		text  string
		want  JAAS
		users map[string]string // users of Server
	}{
		{
			name: "documented server section",
			text: `Server { ` + digest + ` required user_super="adminsecret" user_bob="bobsecret"; };`,
			want: JAAS{"Server": {{Class: digest, Flag: "required",
				Options: map[string]string{"user_super": "adminsecret", "user_bob": "bobsecret"}}}},
			users: map[string]string{"super": "adminsecret", "bob": "bobsecret"},
		},
		{
			name: "comments, bare values, escapes, flag case",
			text: "// line\n/* block\n over lines */ Server {\n a.B Optional user_x=plain /* c */ user_y=\"q\\\"uote\" debug=true;\n};",
			want: JAAS{"Server": {{Class: "a.B", Flag: "optional",
				Options: map[string]string{"user_x": "plain", "user_y": `q"uote`, "debug": "true"}}}},
			users: map[string]string{"x": "plain", "y": `q"uote`},
		},
		{
			name: "several sections and modules",
			text: `Server { m.One required user_a="1"; m.Two sufficient user_b="2" user_a="3"; }; Client { m.C required username="a"; };`,
			want: JAAS{
				"Server": {
					{Class: "m.One", Flag: "required", Options: map[string]string{"user_a": "1"}},
					{Class: "m.Two", Flag: "sufficient", Options: map[string]string{"user_b": "2", "user_a": "3"}},
				},
				"Client": {{Class: "m.C", Flag: "required", Options: map[string]string{"username": "a"}}},
			},
			users: map[string]string{"a": "3", "b": "2"},
		},
		{
			name:  "empty file",
			text:  "  // nothing\n",
			want:  JAAS{},
			users: map[string]string{},
		},
		{
			name: "property expansion",
			text: `Server { K required keyTab="${user.home}${/}zk.keytab" principal="zookeeper/${zk.host}@R" ` +
				`lit="${{not.expanded}}" open="${user.home" empty=""; };`,
			want: JAAS{"Server": {{Class: "K", Flag: "required", Options: map[string]string{
				"keyTab": "/home/zk/zk.keytab", "principal": "zookeeper/zk1.example.com@R",
				"lit": "${{not.expanded}}", "open": "${user.home", "empty": "",
			}}}},
			users: map[string]string{},
		},
		{
			name: "Java string escapes",
			text: `Server { K required a="\t|\101|\477|\q|\\"; };`,
			want: JAAS{"Server": {{Class: "K", Flag: "required", Options: map[string]string{
				"a": "\t|A|'7|q|\\",
			}}}},
			users: map[string]string{},
		},
		{
			name: "word characters, quoted names, CRLF",
			text: "\"My Server\" {\r\n \"a.B\" \"REQUIRED\" a-b.c_d$*=x-y.z9 \"user_sp ace\"=\"v\";\r\n};\r\n",
			want: JAAS{"My Server": {{Class: "a.B", Flag: "required", Options: map[string]string{
				"a-b.c_d$*": "x-y.z9", "user_sp ace": "v",
			}}}},
			users: map[string]string{},
		},
		{
			name:  "a string ends at the end of its line",
			text:  "Server { K required user_a=\"abc\n; };",
			want:  JAAS{"Server": {{Class: "K", Flag: "required", Options: map[string]string{"user_a": "abc"}}}},
			users: map[string]string{"a": "abc"},
		},
		{
			name:  "an unterminated comment ends the file",
			text:  "Server { K required; }; /* Client { K required; };",
			want:  JAAS{"Server": {{Class: "K", Flag: "required", Options: map[string]string{}}}},
			users: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJAASWith(tt.text, testProps)
			if err != nil {
				t.Fatalf("ParseJAAS: %v", err)
			}
			if !equalJAAS(got, tt.want) {
				t.Errorf("ParseJAAS = %+v, want %+v", got, tt.want)
			}
			if u := got.Users("Server"); !maps.Equal(u, tt.users) {
				t.Errorf("Users(Server) = %v, want %v", u, tt.users)
			}
		})
	}
}

func TestParseJAASErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{`Server { m.A required user_a="x" };`, `line 1: expected an option name or ';', found '}'`},
		{`Server { m.A always user_a="x"; };`, `line 1: invalid control flag "always"`},
		{`Server { m.A required; }`, `expected ';', found the end of the file`},
		{`Server m.A required; };`, `line 1: expected '{', found "m.A"`},
		{"Server {\n m.A required\n user_a; };", `line 3: expected '=', found ';'`},
		{`Server { m.A required user_a = ; };`, `expected an option value, found ';'`},
		{`Server { m.A required user_a="1"; `, `found the end of the file`},
		{"Server {\n m.A required\n timeout=30; };", `line 3: expected an option value, found the number 30`},
		{"Server { m.A required a='x'; };", `a '-quoted string`},
		{"Server { m.A required; };\n\nServer { m.B required; };", `line 3: section Server is given twice`},
		{"Server {\n m.A required a=\"${nope}\"; };", `line 2: option a: unable to expand property nope`},
		{"Server { m.A required a=\"${empty}\"; };", `"${empty}" expands to an empty value`},
		{"Server { m.A required a=${user.home}; };", `expected an option name or ';', found '{'`},
		{"/*\n\n*/\nServer {\n m.A bogus;\n};", `line 5: invalid control flag "bogus"`},
		{"{ m.A required; };", `line 1: expected a section name, found '{'`},
	}
	for _, tt := range tests {
		_, err := ParseJAASWith(tt.text, testProps)
		if !errors.Is(err, ErrJAASSyntax) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseJAAS(%q) error = %v, want ErrJAASSyntax with %q", tt.text, err, tt.want)
		}
	}
}

func TestLoadJAAS(t *testing.T) {
	j, err := LoadJAAS(filepath.Join("testdata", "jaas.conf"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"super": "adminsecret", "bob": "bobsecret"}
	if u := j.Users("Server"); !maps.Equal(u, want) {
		t.Errorf("Server users = %v, want %v", u, want)
	}
	if u := j.Users("Client"); len(u) != 0 {
		t.Errorf("Client users = %v, want none", u)
	}
	if _, err := LoadJAAS(filepath.Join("testdata", "missing.conf")); err == nil {
		t.Error("LoadJAAS of a missing file succeeded")
	}
}

func TestLoadJAASWithProperties(t *testing.T) {
	props := JavaProperties(map[string]string{"zk.host": "zk1.example.com", "user.home": "/home/zk"})
	j, err := LoadJAASWith(filepath.Join("testdata", "jaas-kerberos.conf"), props)
	if err != nil {
		t.Fatal(err)
	}
	want := JAAS{"Server": {
		{Class: Krb5LoginModule, Flag: "required", Options: map[string]string{"useKeyTab": "true",
			"keyTab": "/home/zk/zk.keytab", "storeKey": "true", "useTicketCache": "false",
			"principal": "zookeeper/zk1.example.com@EXAMPLE.COM"}},
		{Class: "org.apache.zookeeper.server.auth.DigestLoginModule", Flag: "optional",
			Options: map[string]string{"user_bob": `bob"secret`}},
	}}
	if !equalJAAS(j, want) {
		t.Errorf("LoadJAASWith = %+v, want %+v", j, want)
	}
	if _, err := LoadJAASWith(filepath.Join("testdata", "jaas-kerberos.conf"), JavaProperties(nil)); err == nil ||
		!strings.Contains(err.Error(), "jaas-kerberos.conf: ") || !strings.Contains(err.Error(), "line 12: option principal: unable to expand property zk.host") {
		t.Errorf("without -Dzk.host: error %v, want one naming the file, line 12 and zk.host", err)
	}
}

// TestLoadJAASErrorsNameFileAndLine: malformed files that Java refuses too.
func TestLoadJAASErrorsNameFileAndLine(t *testing.T) {
	tests := []struct{ file, want string }{
		{"jaas-number.conf", "line 4: expected an option value, found the number 30"},
		// A bare path starts with '/', which makes the rest of the line a
		// comment for Java's tokenizer: the next line's name becomes the
		// value and its '=' is out of place.
		{"jaas-unquoted-path.conf", "line 5: expected an option name or ';', found '='"},
	}
	for _, tt := range tests {
		path := filepath.Join("testdata", tt.file)
		_, err := LoadJAAS(path)
		if !errors.Is(err, ErrJAASSyntax) || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadJAAS(%s) error = %v, want one starting with the path and saying %q", tt.file, err, tt.want)
		}
	}
}

func TestResolveJAASPath(t *testing.T) {
	props := Properties{"user.home": "/home/zk"}
	tests := []struct{ in, want, err string }{
		{"/etc/zk/jaas.conf", "/etc/zk/jaas.conf", ""},
		{"=/etc/zk/jaas.conf", "/etc/zk/jaas.conf", ""},
		{"${user.home}/jaas.conf", "/home/zk/jaas.conf", ""},
		{"file:/etc/zk/jaas%20x.conf", "/etc/zk/jaas x.conf", ""},
		{"file:///etc/zk/jaas.conf", "/etc/zk/jaas.conf", ""},
		{"relative/jaas.conf", "relative/jaas.conf", ""},
		{"conf:dir/jaas.conf", "conf:dir/jaas.conf", ""},
		{"${nope}/jaas.conf", "", "unable to expand property nope"},
		{"http://example.com/jaas.conf", "", "only file names"},
	}
	for _, tt := range tests {
		got, err := ResolveJAASPath(tt.in, props)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ResolveJAASPath(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ResolveJAASPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestJavaProperties(t *testing.T) {
	p := JavaProperties(map[string]string{"user.home": "/override", "x": "1"})
	if p["user.home"] != "/override" || p["x"] != "1" || p["file.separator"] != "/" || p["user.dir"] == "" {
		t.Errorf("JavaProperties = %v", p)
	}
}

// FuzzParseJAAS: any text parses or gives ErrJAASSyntax, never a panic,
// and every option of a parsed file is expanded.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="bobsecret"; };`)
	f.Add(`Client{x required;};// comment`)
	f.Add("S { K required a=\"${user.home}${/}${{x}}\" b=-1 c=.5 d='q' e=\"\\477\\\n\"; }; /* open")
	f.Fuzz(func(t *testing.T, text string) {
		j, err := ParseJAASWith(text, testProps)
		if err != nil {
			if !errors.Is(err, ErrJAASSyntax) {
				t.Fatalf("error %v is not ErrJAASSyntax", err)
			}
			return
		}
		for _, modules := range j {
			for _, m := range modules {
				for k, v := range m.Options {
					if strings.Contains(v, "${user.home}") {
						t.Fatalf("option %s=%q not expanded", k, v)
					}
				}
			}
		}
	})
}

func equalJAAS(a, b JAAS) bool {
	if len(a) != len(b) {
		return false
	}
	for name, ma := range a {
		mb, ok := b[name]
		if !ok || len(ma) != len(mb) {
			return false
		}
		for i := range ma {
			if ma[i].Class != mb[i].Class || ma[i].Flag != mb[i].Flag || !maps.Equal(ma[i].Options, mb[i].Options) {
				return false
			}
		}
	}
	return true
}
