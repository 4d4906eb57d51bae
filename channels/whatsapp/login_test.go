package whatsapp

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	waBinary "go.mau.fi/whatsmeow/binary"
	"go.mau.fi/whatsmeow/types"
)

// TestLoginWithoutNetwork: every dial goes to loopback, where nothing
// answers (closed port) or a peer accepts and never speaks (black hole).
// Login must fail fast with a message, not hang.
func TestLoginWithoutNetwork(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()

	cases := []struct {
		name    string
		addr    string
		opts    LoginOptions
		wantErr string
	}{
		{"closed port", closedAddr, LoginOptions{}, "cannot reach WhatsApp"},
		{"black hole", hole.Addr().String(), LoginOptions{connectTimeout: 300 * time.Millisecond}, "timed out after 300ms connecting to WhatsApp"},
		{"black hole, overall timeout first", hole.Addr().String(), LoginOptions{Timeout: 200 * time.Millisecond}, "gave up connecting"},
		{"phone pairing, closed port", closedAddr, LoginOptions{Phone: "+49 171 2345678"}, "cannot reach WhatsApp"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Session = Session{Path: filepath.Join(t.TempDir(), "whatsapp.db")}
			var out bytes.Buffer
			opts.Out = &out
			var dials atomic.Int32
			opts.dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
				dials.Add(1)
				var d net.Dialer
				return d.DialContext(ctx, network, tc.addr)
			}
			start := time.Now()
			err := Login(context.Background(), opts)
			elapsed := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Login error %v, want %q", err, tc.wantErr)
			}
			// Well under the 30 s connect default: the bound set here was
			// the one applied, with room for a loaded machine.
			if elapsed > 20*time.Second {
				t.Errorf("Login took %v", elapsed)
			}
			if dials.Load() == 0 {
				t.Error("the dial override was not used")
			}
			if strings.Contains(out.String(), "Scan") {
				t.Errorf("printed a QR prompt without a connection: %q", out.String())
			}
		})
	}
}

func TestLoginRejectsBadPhoneBeforeConnecting(t *testing.T) {
	for _, p := range []string{"0171234567", "+0171234", "+49abc1234567", "+123"} {
		err := Login(context.Background(), LoginOptions{
			Session: Session{Path: filepath.Join(t.TempDir(), "wa.db")},
			Phone:   p,
			dial: func(context.Context, string, string) (net.Conn, error) {
				t.Errorf("%s: dialled", p)
				return nil, net.ErrClosed
			},
		})
		if err == nil || !strings.Contains(err.Error(), "phone") {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestNormalisePhone(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "",
		"+4917012345678":   "4917012345678",
		"+1 (555) 010-999": "1555010999",
		" +44 7700.900123": "447700900123",
	} {
		got, err := normalisePhone(in)
		if err != nil || got != want {
			t.Errorf("normalisePhone(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// signalWriter collects output and closes seen once it contains want.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.want)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestLoginPasskeyRequest pairs against a fake WhatsApp: it offers a QR
// code, which Login shows, then asks for a passkey, which botd cannot
// give. Login must end with that said, not wait or call it an unknown
// state.
func TestLoginPasskeyRequest(t *testing.T) {
	fake := newFakeWhatsApp(t)
	tr := fake.transport()
	out := &signalWriter{want: "Scan this QR code", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- Login(t.Context(), LoginOptions{
			Session:   Session{Path: filepath.Join(t.TempDir(), "whatsapp.db")},
			Out:       out,
			dial:      tr.DialContext,
			tlsConfig: tr.TLSClientConfig,
		})
	}()

	s := fake.session(t)
	if err := s.writeNode(waBinary.Node{
		Tag:   "iq",
		Attrs: waBinary.Attrs{"id": "pair-1", "type": "set", "from": types.ServerJID},
		Content: []waBinary.Node{{Tag: "pair-device", Content: []waBinary.Node{
			{Tag: "ref", Content: []byte("2@fake-ref")},
		}}},
	}); err != nil {
		t.Fatal(err)
	}
	recv(t, out.seen, "the QR code")
	if err := s.writeNode(waBinary.Node{
		Tag:   "notification",
		Attrs: waBinary.Attrs{"id": "passkey-1", "type": "passkey_prologue_request", "from": types.ServerJID},
		Content: []waBinary.Node{{Tag: "passkey_request_options", Content: []byte(
			`{"challenge":"Y2hhbGxlbmdl","timeout":60000,"rpId":"whatsapp.com","allowCredentials":[],"userVerification":"preferred"}`)}},
	}); err != nil {
		t.Fatal(err)
	}
	err := recv(t, done, "Login to return")
	if err == nil || !strings.Contains(err.Error(), "passkey") || !strings.Contains(err.Error(), "--phone") {
		t.Errorf("Login after a passkey request: %v\noutput:\n%s", err, out)
	}
}
