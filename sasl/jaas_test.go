package sasl

import (
	"errors"
	"maps"
	"path/filepath"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		want  JAAS
		users map[string]string // users of Server
	}{
		{
			name: "documented server section",
			text: `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_super="adminsecret" user_bob="bobsecret"; };`,
			want: JAAS{"Server": {{Class: "org.apache.zookeeper.server.auth.DigestLoginModule", Flag: "required",
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
			name: "several sections and modules; repeated section appends",
			text: `Server { m.One required user_a="1"; m.Two sufficient user_b="2"; }; Client { m.C required username="a"; }; Server { m.Three requisite user_a="3"; };`,
			want: JAAS{
				"Server": {
					{Class: "m.One", Flag: "required", Options: map[string]string{"user_a": "1"}},
					{Class: "m.Two", Flag: "sufficient", Options: map[string]string{"user_b": "2"}},
					{Class: "m.Three", Flag: "requisite", Options: map[string]string{"user_a": "3"}},
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJAAS(tt.text)
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
	for _, text := range []string{
		`Server { m.A required user_a="x" };`, // missing ';' after module
		`Server { m.A always user_a="x"; };`,  // bad flag
		`Server { m.A required user_a="x; };`, // unterminated string
		`Server { m.A required; }`,            // missing ';' after section
		`Server m.A required; };`,             // missing '{'
		`Server { m.A required user_a; };`,    // option without value
		`/* open comment Server { };`,         // unterminated comment
		`Server { m.A required user_a = ; };`, // value is punctuation
		`Server { m.A required user_a="1"; `,  // unterminated section
	} {
		if _, err := ParseJAAS(text); !errors.Is(err, ErrJAASSyntax) {
			t.Errorf("ParseJAAS(%q) error = %v, want ErrJAASSyntax", text, err)
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
