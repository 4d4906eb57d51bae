package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/config"
)

const mcpLoginLine = "botd mcp-login NAME [--timeout 5m] [--config FILE]"

// cmdMCPLogin signs botd in to a remote MCP server of agent.mcp_servers
// whose oauth flow is authorization_code: it prints the address a person
// opens in a browser, waits on the redirect URI for the answer and keeps
// the token (data_dir/mcp/NAME.token.json, 0600) for the daemon's runs,
// which refresh it from then on.
func cmdMCPLogin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mcp-login", mcpLoginLine,
		"Sign botd in to the remote MCP server NAME of agent.mcp_servers (oauth flow authorization_code, with PKCE): "+
			"open the printed address in a browser and sign in; botd keeps the token in data_dir/mcp and the running "+
			"daemon uses it from its next run.", stderr)
	cfgFlag := configFlag(fs)
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the browser")
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfigFor(*cfgFlag, under("data_dir", "agent.mcp_servers"), stderr)
	if err != nil {
		return err
	}
	srv, ok := config.Section[agent.Config](cfg).MCPServers[name]
	if !ok {
		names := slices.Sorted(func(yield func(string) bool) {
			for n, s := range config.Section[agent.Config](cfg).MCPServers {
				if s.OAuth != nil && s.OAuth.Flow == agent.FlowAuthorizationCode && !yield(n) {
					return
				}
			}
		})
		return fail(2, "name a server of agent.mcp_servers to sign in to (with oauth flow authorization_code: %s)", orNone(names))
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	err = agent.LoginRemoteMCP(ctx, name, srv, cfg.DataDir, func(authURL string) {
		fmt.Fprintf(stdout, "Open this address in a browser and sign in to let botd use %s:\n\n  %s\n\nWaiting for the browser (%s)…\n", name, authURL, *timeout)
	})
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "Signed in: the token is kept in %s/mcp/%s.token.json; botd run uses it from its next run.\n", cfg.DataDir, name)
	return nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none is configured"
	}
	return strings.Join(names, ", ")
}
