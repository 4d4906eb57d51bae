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
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/botd-dev/botd/internal/atomicfile"
)

// ClientCredentials are a remote server's OAuth 2.1 client credentials
// grant (RFC 6749 §4.4, as x/oauth2 speaks it).
type ClientCredentials struct {
	TokenURL     string
	ClientID     string
	ClientSecret string
	Scopes       []string
	// Dir keeps the token (data_dir/mcp), File its name there; an empty
	// Dir keeps it in memory only.
	Dir, File string
	// HTTP asks the token endpoint; New sets the server's guarded client.
	HTTP *http.Client
	// Now is the clock of expiry; nil is time.Now.
	Now func() time.Time
}

// refreshBefore is how long before its expiry a token is replaced, so a
// run never starts with a token that dies in the middle of it.
const refreshBefore = 5 * time.Minute

// Tokens hands out a client-credentials access token: the one kept in the
// data folder while it has more than refreshBefore to live, a new one
// from the token endpoint otherwise (kept 0600 for the next start).
type Tokens struct {
	cc  ClientCredentials
	cfg clientcredentials.Config
	key string // what the kept token was got for (endpoint, client, scopes)

	mu     sync.Mutex
	cur    *keptToken
	loaded bool
}

// keptToken is the token file: the access token and when it expires, and
// for which endpoint and client it was got (a changed config asks anew).
// The client secret is never written.
type keptToken struct {
	For         string    `json:"for"`
	AccessToken string    `json:"access_token"`
	TokenType   string    `json:"token_type,omitempty"`
	Expiry      time.Time `json:"expiry,omitzero"`
}

// NewTokens builds the token source of cc.
func NewTokens(cc ClientCredentials) *Tokens {
	if cc.Now == nil {
		cc.Now = time.Now
	}
	sum := sha256.Sum256([]byte(cc.TokenURL + "\x00" + cc.ClientID + "\x00" + strings.Join(cc.Scopes, " ")))
	return &Tokens{cc: cc, key: hex.EncodeToString(sum[:8]), cfg: clientcredentials.Config{
		ClientID: cc.ClientID, ClientSecret: cc.ClientSecret, TokenURL: cc.TokenURL, Scopes: cc.Scopes}}
}

// Token is a live access token.
func (t *Tokens) Token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.loaded {
		t.loaded = true
		t.cur = t.load()
	}
	if t.fresh(t.cur) {
		return t.cur.AccessToken, nil
	}
	tok, err := t.cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, t.cc.HTTP))
	if err != nil {
		return "", &tokenError{explainToken(err)}
	}
	k := &keptToken{For: t.key, AccessToken: tok.AccessToken, TokenType: tok.TokenType}
	// The lifetime is counted on botd's clock (x/oauth2 fills Expiry
	// from the wall clock; ExpiresIn not on every path).
	switch {
	case tok.ExpiresIn > 0:
		k.Expiry = t.cc.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	case !tok.Expiry.IsZero():
		k.Expiry = t.cc.Now().Add(time.Until(tok.Expiry))
	}
	t.cur = k
	// A failed save leaves it in memory only: the next start asks again.
	_ = t.save(k)
	return k.AccessToken, nil
}

// Invalidate drops the token (the server refused it: revoked), so the
// next Token asks the endpoint.
func (t *Tokens) Invalidate() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cur, t.loaded = nil, true
	if t.cc.Dir == "" {
		return
	}
	if r, err := os.OpenRoot(t.cc.Dir); err == nil {
		r.Remove(t.cc.File)
		r.Close()
	}
}

func (t *Tokens) fresh(k *keptToken) bool {
	if k == nil || k.AccessToken == "" || k.For != t.key {
		return false
	}
	return k.Expiry.IsZero() || t.cc.Now().Add(refreshBefore).Before(k.Expiry)
}

// load reads the kept token; nil when there is none (or it is unreadable:
// asking again costs one request).
func (t *Tokens) load() *keptToken {
	if t.cc.Dir == "" {
		return nil
	}
	r, err := os.OpenRoot(t.cc.Dir)
	if err != nil {
		return nil
	}
	defer r.Close()
	f, err := r.Open(t.cc.File)
	if err != nil {
		return nil
	}
	defer f.Close()
	var k keptToken
	if err := json.NewDecoder(io.LimitReader(f, 64<<10)).Decode(&k); err != nil {
		return nil
	}
	return &k
}

// save writes the token file, 0600 in a 0700 folder.
func (t *Tokens) save(k *keptToken) error {
	if t.cc.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(t.cc.Dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(k)
	if err != nil {
		return err
	}
	r, err := os.OpenRoot(t.cc.Dir)
	if err != nil {
		return err
	}
	defer r.Close()
	tmp := t.cc.File + ".tmp"
	if err := r.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.WriteRoot(r, t.cc.File, tmp, 0o600, true, atomicfile.Bytes(b))
}

// ErrTokenRefused is what a refusal of the token endpoint Is.
var ErrTokenRefused = errors.New("the token endpoint refused botd's client credentials")

// explainToken is a token endpoint's failure as a sentence: refused
// credentials (its OAuth error code, never the secret), or why it could
// not be asked.
func explainToken(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := re.ErrorCode
		if code == "" && re.Response != nil {
			code = re.Response.Status
		}
		return fmt.Errorf("%w (%s): check oauth.client_id, oauth.client_secret and oauth.scopes", ErrTokenRefused, code)
	}
	return fmt.Errorf("asking the token endpoint: %w", err)
}

// tokenError is a failure of the token endpoint (Explain says so).
type tokenError struct{ err error }

func (e *tokenError) Error() string { return "OAuth token endpoint: " + e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }
