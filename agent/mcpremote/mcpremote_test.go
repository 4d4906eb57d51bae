package mcpremote

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// fakeDNS answers names from a table, so no test depends on real DNS.
type fakeDNS map[string]string

func (f fakeDNS) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	a, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// to dials addr on loopback whatever checked address the guard chose:
// a "public" server in a test.
func to(addr string) func(ctx context.Context, network, _ string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

func initialize(ctx context.Context, c *client.Client) error {
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: "test", Version: "1"}
	_, err := c.Initialize(ctx, req)
	return err
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		url          string
		allowPrivate bool
		want         string // "" is allowed
	}{
		{"https://mcp.example.com/mcp", false, ""},
		{"http://127.0.0.1:8123/mcp", false, "it is a loopback address (this machine) (for a server on your own network, set allow_private: true"},
		{"http://127.0.0.1:8123/mcp", true, ""},
		{"http://192.168.1.20:8123/api/mcp", true, ""},
		{"http://[fd00::5]:8123/mcp", true, ""},
		{"http://[::1]:8123/mcp", false, "set allow_private: true"},
		{"http://169.254.169.254/latest", true, "link-local"},
		{"http://homeassistant.local:8123/mcp", true, "allow_private opens addresses, never names"},
		{"http://localhost:8123/mcp", false, "give its address, not a name"},
		{"http://0177.0.0.1/mcp", true, "four plain decimal numbers"},
		{"ftp://mcp.example.com/", false, "only http and https"},
		{"https://user:pw@mcp.example.com/", false, "user name or password"},
		{"::not a url", false, "it is not a URL"},
	} {
		err := Check(tc.url, tc.allowPrivate)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%q, %v) = %v, want allowed", tc.url, tc.allowPrivate, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%q, %v) = %v, want %q", tc.url, tc.allowPrivate, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("the refusal echoes the password: %v", err)
		}
	}
}

// What a URL's text does not show is checked when it is dialled: a name
// that resolves to a private address (rebinding), and a redirect to one.
// Neither reaches the inside server.
func TestDialTimeRefusals(t *testing.T) {
	var inside atomic.Int32
	in := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { inside.Add(1) }))
	t.Cleanup(in.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, in.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"rebinding name", Options{URL: "http://mcp.example.com/mcp", Resolver: fakeDNS{"mcp.example.com": "10.0.0.5"}, Dial: to(in.Listener.Addr().String())},
			"botd does not open mcp.example.com: it resolves to 10.0.0.5, which is a private address (RFC 1918) (for a server on your own network, set allow_private: true"},
		{"redirect inside", Options{URL: "http://mcp.example.com/mcp", Resolver: fakeDNS{"mcp.example.com": "93.184.216.34"}, Dial: to(redirector.Listener.Addr().String())},
			"botd does not open 127.0.0.1: it is a loopback address"},
		{"unknown name", Options{URL: "http://nowhere.example.com/mcp", Resolver: fakeDNS{}}, "its name does not resolve (no such host)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := s.Connect(ctx)
			if err == nil {
				err = initialize(ctx, c)
				c.Close()
			}
			if got := Explain(err, false); err == nil || !strings.Contains(got, tc.want) {
				t.Errorf("Explain = %q (err %v), want %q", got, err, tc.want)
			}
			if n := inside.Load(); n != 0 {
				t.Errorf("the inside server was reached %d times", n)
			}
		})
	}
}

// A server cannot make botd hold more than MaxResponseBytes of one answer.
func TestResponseCap(t *testing.T) {
	ms := server.NewMCPServer("big", "1")
	ms.AddTool(mcpgo.NewTool("big"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(strings.Repeat("x", MaxResponseBytes+1024)), nil
	})
	ms.AddTool(mcpgo.NewTool("small"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("fine"), nil
	})
	// It stands for a public server: it takes the public name as Host.
	srv := httptest.NewServer(server.NewStreamableHTTPServer(ms, server.WithDisableLocalhostProtection(true)))
	t.Cleanup(srv.Close)
	s, err := New(Options{URL: "http://mcp.example.com/mcp", Resolver: fakeDNS{"mcp.example.com": "93.184.216.34"}, Dial: to(srv.Listener.Addr().String())})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := s.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := initialize(ctx, c); err != nil {
		t.Fatal(err)
	}
	call := func(name string) (*mcpgo.CallToolResult, error) {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = name
		return c.CallTool(ctx, req)
	}
	if _, err := call("big"); err == nil || Explain(err, false) != ErrResponseTooLarge.Error() {
		t.Errorf("a %d MB answer: err = %v (%q)", MaxResponseBytes>>20+1, err, Explain(err, false))
	}
	if res, err := call("small"); err != nil || len(res.Content) != 1 {
		t.Errorf("a small answer after the big one: %+v, %v", res, err)
	}
}

// The kept token: 0600 however the file was before, not used for another
// client, nowhere without a folder.
func TestTokensKept(t *testing.T) {
	var issued atomic.Int32
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"t` + string(rune('0'+n)) + `","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(ep.Close)
	dir := filepath.Join(t.TempDir(), "mcp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s.token.json"), []byte(`{"for":"someone else","access_token":"old"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := ClientCredentials{TokenURL: ep.URL, ClientID: "c", ClientSecret: "secret-value", Dir: dir, File: "s.token.json", HTTP: ep.Client()}
	tok, err := NewTokens(cc).Token(context.Background())
	if err != nil || tok != "t1" {
		t.Fatalf("token = %q, %v; want a new one, not another client's", tok, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "s.token.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kept token %v, %v; want 0600", fi, err)
	}
	// Another client id: the kept token is not its own.
	cc2 := cc
	cc2.ClientID = "c2"
	if tok, _ := NewTokens(cc2).Token(context.Background()); tok != "t2" {
		t.Errorf("another client got %q, want a token of its own", tok)
	}
	// No folder: in memory only.
	cc3 := cc
	cc3.Dir = ""
	ts := NewTokens(cc3)
	if tok, _ := ts.Token(context.Background()); tok != "t3" {
		t.Errorf("token = %q", tok)
	}
	if tok, _ := ts.Token(context.Background()); tok != "t3" {
		t.Errorf("the token in memory was not reused: %q", tok)
	}
	if _, err := os.Stat("s.token.json"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a token without a folder was written in the working directory")
	}
}
