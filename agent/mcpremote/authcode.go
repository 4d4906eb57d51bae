package mcpremote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/botd-dev/botd/internal/atomicfile"
)

// AuthCode is a remote server's OAuth 2.1 authorization code grant with
// PKCE: a person signs botd in once (Login, botd mcp-login), and mcp-go's
// OAuth handler uses and refreshes the token kept in Dir/File (0600).
type AuthCode struct {
	ClientID     string
	ClientSecret string // empty for a public client
	Scopes       []string
	// RedirectURI is botd's loopback address the authorization server
	// sends the person back to (http://127.0.0.1:PORT/callback).
	RedirectURI string
	// Dir keeps the token (data_dir/mcp), File its name there; an empty
	// Dir keeps it in memory only.
	Dir, File string
}

// oauthConfig is mcp-go's OAuth handler configuration for ac: PKCE on,
// the token endpoint and metadata asked through hc (the guarded client).
func (ac *AuthCode) oauthConfig(hc *http.Client, serverURL string) transport.OAuthConfig {
	return transport.OAuthConfig{ClientID: ac.ClientID, ClientSecret: ac.ClientSecret, RedirectURI: ac.RedirectURI, Scopes: ac.Scopes,
		PKCEEnabled: true, HTTPClient: hc, TokenStore: newFileStore(ac.Dir, ac.File, serverURL+"\x00"+ac.ClientID)}
}

// fileStore is mcp-go's TokenStore kept in a 0600 file, marked with what
// it was got for (the server and client), so a changed config asks anew.
type fileStore struct {
	dir, file, key string

	mu  sync.Mutex
	mem *transport.Token
}

func newFileStore(dir, file, what string) *fileStore {
	sum := sha256.Sum256([]byte(what))
	return &fileStore{dir: dir, file: file, key: hex.EncodeToString(sum[:8])}
}

type storedToken struct {
	For   string           `json:"for"`
	Token *transport.Token `json:"token"`
}

func (s *fileStore) GetToken(ctx context.Context) (*transport.Token, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil {
		return s.mem, nil
	}
	if s.dir == "" {
		return nil, transport.ErrNoToken
	}
	r, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, transport.ErrNoToken
	}
	defer r.Close()
	f, err := r.Open(s.file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, transport.ErrNoToken
	}
	if err != nil {
		return nil, fmt.Errorf("read the kept token: %w", err)
	}
	defer f.Close()
	var st storedToken
	if err := json.NewDecoder(io.LimitReader(f, 64<<10)).Decode(&st); err != nil || st.For != s.key || st.Token == nil {
		return nil, transport.ErrNoToken
	}
	s.mem = st.Token
	return st.Token, nil
}

func (s *fileStore) SaveToken(ctx context.Context, t *transport.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem = t
	if s.dir == "" {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("keep the token: %w", err)
	}
	b, err := json.Marshal(storedToken{For: s.key, Token: t})
	if err != nil {
		return err
	}
	r, err := os.OpenRoot(s.dir)
	if err != nil {
		return fmt.Errorf("keep the token: %w", err)
	}
	defer r.Close()
	tmp := s.file + ".tmp"
	if err := r.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keep the token: %w", err)
	}
	return atomicfile.WriteRoot(r, s.file, tmp, 0o600, true, atomicfile.Bytes(b))
}

// Login signs botd in to a server with the authorization code grant and
// PKCE: show gets the address a person opens in a browser; botd listens
// on the redirect URI (loopback only) for the answer, checks its state
// and exchanges the code (with the verifier) for tokens, which it keeps.
// It returns when the token is kept, the person refused, or ctx ends.
func Login(ctx context.Context, o Options, show func(authURL string)) error {
	if o.AuthCode == nil {
		return errors.New("this server has no oauth with flow authorization_code")
	}
	s, err := New(o)
	if err != nil {
		return err
	}
	ru, err := url.Parse(o.AuthCode.RedirectURI)
	if err != nil || ru.Scheme != "http" || !loopbackHost(ru.Hostname()) || ru.Port() == "" {
		return errors.New("oauth.redirect_uri must be http://127.0.0.1:PORT/… (botd listens there for the answer)")
	}
	ln, err := net.Listen("tcp", ru.Host)
	if err != nil {
		return fmt.Errorf("listen for the answer on %s: %w", ru.Host, err)
	}
	defer ln.Close()
	h := transport.NewOAuthHandler(o.AuthCode.oauthConfig(s.http, o.URL))
	h.SetBaseURL(baseURL(o.URL))
	verifier, err := transport.GenerateCodeVerifier()
	if err != nil {
		return err
	}
	state, err := transport.GenerateState()
	if err != nil {
		return err
	}
	authURL, err := h.GetAuthorizationURL(ctx, state, transport.GenerateCodeChallenge(verifier))
	if err != nil {
		return fmt.Errorf("find the authorization server: %s", Explain(err, o.AllowPrivate))
	}
	type answer struct{ code, state, err string }
	got := make(chan answer, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ru.Path {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		a := answer{code: q.Get("code"), state: q.Get("state"), err: q.Get("error")}
		if a.state != state {
			http.Error(w, "this answer is not for the sign-in botd started", http.StatusBadRequest)
			return
		}
		select {
		case got <- a:
		default:
		}
		if a.err != "" {
			fmt.Fprintln(w, "botd was not signed in:", a.err)
			return
		}
		fmt.Fprintln(w, "botd is signed in; you can close this page.")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	show(authURL)
	select {
	case <-ctx.Done():
		return fmt.Errorf("no answer from the browser: %w", ctx.Err())
	case a := <-got:
		if a.err != "" {
			return fmt.Errorf("the authorization server answered %q: botd is not signed in", a.err)
		}
		if err := h.ProcessAuthorizationResponse(ctx, a.code, a.state, verifier); err != nil {
			return fmt.Errorf("exchange the code for a token: %w", err)
		}
		return nil
	}
}

func loopbackHost(h string) bool {
	return h == "127.0.0.1" || h == "::1" || h == "localhost"
}

// baseURL is scheme://host of a URL, where mcp-go looks for the
// authorization server's metadata.
func baseURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return strings.TrimSuffix((&url.URL{Scheme: u.Scheme, Host: u.Host}).String(), "/")
}
