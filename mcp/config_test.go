package mcp

import (
	"slices"
	"strings"
	"testing"
)

func TestTokenGrantsValidate(t *testing.T) {
	known := func(f string) bool { return f == "family" || f == "work" }
	const tok = "0123456789abcdef0"
	for _, tc := range []struct {
		name  string
		grant TokenGrant
		want  string // "" is valid
	}{
		{"one group", TokenGrant{Token: tok, Group: "family"}, ""},
		{"several", TokenGrant{Token: tok, Groups: []string{"family", "work"}, ReadOnly: true}, ""},
		{"both keys", TokenGrant{Token: tok, Group: "family", Groups: []string{"work"}}, "mcp.http.tokens[0].groups: is given beside group"},
		{"neither", TokenGrant{Token: tok}, "mcp.http.tokens[0].group: is missing"},
		{"unknown in list", TokenGrant{Token: tok, Groups: []string{"family", "nope"}}, `mcp.http.tokens[0].groups[1]: unknown group folder "nope"`},
		{"twice in list", TokenGrant{Token: tok, Groups: []string{"work", "work"}}, `mcp.http.tokens[0].groups[1]: group "work" is listed twice`},
		{"unknown group", TokenGrant{Token: tok, Group: "nope"}, `mcp.http.tokens[0].group: unknown group folder "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Config{HTTP: HTTPConfig{Tokens: []TokenGrant{tc.grant}}}.Validate(known)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestTokenGrantKeys(t *testing.T) {
	one := TokenGrant{Group: "family"}
	both := TokenGrant{Groups: []string{"family", "work"}}
	reader := TokenGrant{Groups: []string{"family", "work"}, ReadOnly: true}
	if !slices.Equal(one.Folders(), []string{"family"}) || !slices.Equal(both.Folders(), []string{"family", "work"}) {
		t.Fatalf("folders: %v %v", one.Folders(), both.Folders())
	}
	// Tokens of different grants never share a server.
	if one.Key() == both.Key() || both.Key() == reader.Key() {
		t.Fatalf("keys collide: %q %q %q", one.Key(), both.Key(), reader.Key())
	}
}
