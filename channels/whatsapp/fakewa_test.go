package whatsapp

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.mau.fi/libsignal/ecc"
	"go.mau.fi/whatsmeow"
	waBinary "go.mau.fi/whatsmeow/binary"
	"go.mau.fi/whatsmeow/proto/waCert"
	"go.mau.fi/whatsmeow/proto/waWa6"
	"go.mau.fi/whatsmeow/socket"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"go.mau.fi/whatsmeow/util/keys"
	"google.golang.org/protobuf/proto"

	"github.com/botd-dev/botd/channels/chantest"
)

// fakeWhatsApp stands in for web.whatsapp.com on loopback, as far as the
// tests need it. whatsmeow downloads only from the hosts the server names
// in answer to a media_conn query over the websocket (never from the URL in
// the message), so a real whatsmeow client can only reach a loopback CDN
// once something on its websocket answers that query. The fake completes
// the Noise handshake the client starts, with a certificate chain under a
// root key the test installs in place of WhatsApp's, and answers
// media_conn with mediaHosts; every other node is read and left
// unanswered. A test sends its own nodes (a pairing request) through
// session.
type fakeWhatsApp struct {
	srv        *httptest.Server
	mediaHosts []string
	static     *keys.KeyPair // the server's Noise static key
	certChain  []byte        // marshalled waCert.CertChain vouching for static

	mediaConns atomic.Int32 // media_conn queries answered

	wg       sync.WaitGroup // running connections
	mu       sync.Mutex
	conns    []*websocket.Conn
	sessions chan *waSession // each connection once its handshake is done
	closed   bool
	err      error // the first protocol error, reported when the test ends
}

// newFakeWhatsApp starts the fake and points whatsmeow's certificate check
// at its root key until the test ends. The tests in this package are not
// parallel, so nothing else handshakes meanwhile.
func newFakeWhatsApp(t *testing.T, mediaHosts ...string) *fakeWhatsApp {
	t.Helper()
	root, intermediate, static := keys.NewKeyPair(), keys.NewKeyPair(), keys.NewKeyPair()
	now := time.Now()
	details := func(serial, issuer uint32, key *[32]byte) []byte {
		b, err := proto.Marshal(&waCert.CertChain_NoiseCertificate_Details{
			Serial: proto.Uint32(serial), IssuerSerial: proto.Uint32(issuer), Key: key[:],
			NotBefore: proto.Uint64(uint64(now.Add(-time.Hour).Unix())),
			NotAfter:  proto.Uint64(uint64(now.Add(time.Hour).Unix())),
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sign := func(by *keys.KeyPair, msg []byte) []byte {
		sig := ecc.CalculateSignature(ecc.NewDjbECPrivateKey(*by.Priv), msg)
		return sig[:]
	}
	interDetails := details(1, whatsmeow.WACertIssuerSerial, intermediate.Pub)
	leafDetails := details(2, 1, static.Pub)
	chain, err := proto.Marshal(&waCert.CertChain{
		Intermediate: &waCert.CertChain_NoiseCertificate{Details: interDetails, Signature: sign(root, interDetails)},
		Leaf:         &waCert.CertChain_NoiseCertificate{Details: leafDetails, Signature: sign(intermediate, leafDetails)},
	})
	if err != nil {
		t.Fatal(err)
	}

	f := &fakeWhatsApp{mediaHosts: mediaHosts, static: static, certChain: chain, sessions: make(chan *waSession, 8)}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))

	realRoot := whatsmeow.WACertPubKey
	whatsmeow.WACertPubKey = *root.Pub
	t.Cleanup(func() {
		whatsmeow.WACertPubKey = realRoot
		f.close()
		if err := f.failure(); err != nil {
			t.Errorf("fake WhatsApp: %v", err)
		}
	})
	return f
}

// transport takes every dial to the fake, trusting its certificate: the
// client keeps dialing wss://web.whatsapp.com/ws/chat.
func (f *fakeWhatsApp) transport() *http.Transport {
	tr := f.srv.Client().Transport.(*http.Transport).Clone()
	addr := f.srv.Listener.Addr().String()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	// httptest's certificate names example.com, not web.whatsapp.com.
	tr.TLSClientConfig.ServerName = "example.com"
	return tr
}

// connect connects wm to the fake and disconnects it when the test ends.
func (f *fakeWhatsApp) connect(t *testing.T, wm *whatsmeow.Client) {
	t.Helper()
	hc := &http.Client{Transport: f.transport()}
	wm.SetPreLoginHTTPClient(hc)
	wm.SetWebsocketHTTPClient(hc)
	wm.EnableAutoReconnect = false
	gone := make(chan struct{})
	var once sync.Once
	wm.AddEventHandler(func(e any) {
		if _, ok := e.(*events.Disconnected); ok {
			once.Do(func() { close(gone) })
		}
	})
	if err := wm.ConnectContext(t.Context()); err != nil {
		t.Fatalf("connect to the fake WhatsApp: %v", err)
	}
	// The server hangs up rather than the client disconnecting: whatsmeow's
	// Disconnect writes the socket's OnDisconnect while its read pump,
	// ending because of that very disconnect, reads it (a race inside
	// whatsmeow that the race detector reports). A hang-up takes the path
	// a dropped connection takes, which orders the two.
	t.Cleanup(func() {
		f.hangUp()
		select {
		case <-gone:
		case <-time.After(chantest.HangGuard):
			t.Error("the client never noticed the fake WhatsApp hang up")
		}
	})
}

// hangUp closes every connection from the server's side.
func (f *fakeWhatsApp) hangUp() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
}

// session waits for the next connection to complete its handshake.
func (f *fakeWhatsApp) session(t *testing.T) *waSession {
	t.Helper()
	return recv(t, f.sessions, "a connection to the fake WhatsApp")
}

func (f *fakeWhatsApp) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *fakeWhatsApp) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// close stops the server and waits for every connection to end: they are
// hijacked, so httptest's Close does not wait for them.
func (f *fakeWhatsApp) close() {
	f.srv.Close()
	f.mu.Lock()
	f.closed = true
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *fakeWhatsApp) serve(w http.ResponseWriter, r *http.Request) {
	// Before the upgrade: srv.Close waits for handlers until they hijack
	// the connection, so close's Wait sees every Add.
	f.wg.Add(1)
	defer f.wg.Done()
	if r.URL.Path != "/ws/chat" {
		http.NotFound(w, r)
		return
	}
	// The default origin check holds: the client sends WhatsApp Web's
	// origin for the host it believes it dialled.
	c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		f.fail(fmt.Errorf("websocket upgrade: %w", err))
		return
	}
	defer c.Close()
	f.mu.Lock()
	closed := f.closed
	f.conns = append(f.conns, c)
	f.mu.Unlock()
	if closed {
		return
	}

	s := &waSession{c: c, wantHeader: socket.WAConnHeader}
	if err := s.handshake(f.static, f.certChain); err != nil {
		f.fail(fmt.Errorf("noise handshake: %w", err))
		return
	}
	select {
	case f.sessions <- s:
	default: // nobody asked for this many
	}
	for {
		node, err := s.readNode()
		if err != nil {
			if !errors.Is(err, errConnClosed) {
				f.fail(err)
			}
			return
		}
		if node.Tag != "iq" {
			continue
		}
		var answer waBinary.Node
		if _, ok := node.GetOptionalChildByTag("media_conn"); ok {
			f.mediaConns.Add(1)
			answer = f.mediaConnAnswer(node)
		} else if a, ok := loginAnswer(node); ok {
			answer = a
		} else {
			continue
		}
		if err := s.writeNode(answer); err != nil {
			if !errors.Is(err, errConnClosed) {
				f.fail(err)
			}
			return
		}
	}
}

// serverPreKeys is how many pre-keys the fake says it holds for a logged
// in device: enough that the client uploads none.
const serverPreKeys = 50

// loginAnswer answers the two queries a client sends after <success>
// before it reports itself connected: the server's pre-key count and
// going active.
func loginAnswer(query *waBinary.Node) (waBinary.Node, bool) {
	ag := query.AttrGetter()
	result := waBinary.Node{
		Tag:   "iq",
		Attrs: waBinary.Attrs{"id": ag.String("id"), "type": "result", "from": types.ServerJID},
	}
	switch {
	case ag.OptionalString("xmlns") == "passive":
		return result, true
	case ag.OptionalString("xmlns") == "encrypt":
		if _, ok := query.GetOptionalChildByTag("count"); ok {
			result.Content = []waBinary.Node{{Tag: "count", Attrs: waBinary.Attrs{"value": strconv.Itoa(serverPreKeys)}}}
			return result, true
		}
	}
	return waBinary.Node{}, false
}

func (f *fakeWhatsApp) mediaConnAnswer(query *waBinary.Node) waBinary.Node {
	hosts := make([]waBinary.Node, len(f.mediaHosts))
	for i, h := range f.mediaHosts {
		hosts[i] = waBinary.Node{Tag: "host", Attrs: waBinary.Attrs{"hostname": h}}
	}
	return waBinary.Node{
		Tag:   "iq",
		Attrs: waBinary.Attrs{"id": query.AttrGetter().String("id"), "type": "result", "from": types.ServerJID},
		Content: []waBinary.Node{{
			Tag:     "media_conn",
			Attrs:   waBinary.Attrs{"auth": "fake-auth", "ttl": "300", "auth_ttl": "21600", "max_buckets": "12"},
			Content: hosts,
		}},
	}
}

var errConnClosed = errors.New("connection closed")

// waSession is the server end of one connection: WhatsApp's framing (a
// 3-byte length before each frame, the client's first frame preceded by
// the "WA" header) and the Noise_XX_25519_AESGCM_SHA256 handshake and
// transport, written from the protocol rather than with whatsmeow's socket
// package, so a mistake there cannot cancel out.
type waSession struct {
	c          *websocket.Conn
	wantHeader []byte
	buf        []byte
	writeMu    sync.Mutex // the test pushes nodes while serve answers

	// Handshake state.
	hash, salt []byte
	key        cipher.AEAD
	counter    uint32

	// What the client presented: its Noise static key (the device's noise
	// key once paired) and its login payload.
	clientStatic []byte
	payload      *waWa6.ClientPayload

	// Transport keys once the handshake is done.
	readKey, writeKey     cipher.AEAD
	readCount, writeCount uint32
}

func (s *waSession) readFrame() ([]byte, error) {
	for {
		if s.wantHeader == nil && len(s.buf) >= 3 {
			n := int(s.buf[0])<<16 | int(s.buf[1])<<8 | int(s.buf[2])
			if len(s.buf) >= 3+n {
				frame := s.buf[3 : 3+n]
				s.buf = s.buf[3+n:]
				return frame, nil
			}
		}
		if s.wantHeader != nil && len(s.buf) >= len(s.wantHeader) {
			if !bytes.Equal(s.buf[:len(s.wantHeader)], s.wantHeader) {
				return nil, fmt.Errorf("connection header %x, want %x", s.buf[:len(s.wantHeader)], s.wantHeader)
			}
			s.buf = s.buf[len(s.wantHeader):]
			s.wantHeader = nil
			continue
		}
		_, msg, err := s.c.ReadMessage()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errConnClosed, err)
		}
		s.buf = append(s.buf, msg...)
	}
}

func (s *waSession) writeFrame(data []byte) error {
	frame := append([]byte{byte(len(data) >> 16), byte(len(data) >> 8), byte(len(data))}, data...)
	if err := s.c.WriteMessage(websocket.BinaryMessage, frame); err != nil {
		return fmt.Errorf("%w: %w", errConnClosed, err)
	}
	return nil
}

func nonce(n uint32) []byte {
	iv := make([]byte, 12)
	binary.BigEndian.PutUint32(iv[8:], n)
	return iv
}

func newGCM(key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // only for a key that is not 32 bytes
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

func (s *waSession) mixHash(data []byte) {
	h := sha256.Sum256(append(bytes.Clone(s.hash), data...))
	s.hash = h[:]
}

// split derives two keys from the chaining key and ikm: the next chaining
// key and handshake cipher key while mixing, the two transport keys (the
// client's sending key first) at the end.
func (s *waSession) split(ikm []byte) (first, second []byte) {
	out, err := hkdf.Key(sha256.New, ikm, s.salt, "", 64)
	if err != nil {
		panic(err) // only for a length HKDF cannot produce
	}
	return out[:32], out[32:]
}

func (s *waSession) mixDH(priv, pub *[32]byte) error {
	k, err := ecdh.X25519().NewPrivateKey(priv[:])
	if err != nil {
		return err
	}
	p, err := ecdh.X25519().NewPublicKey(pub[:])
	if err != nil {
		return err
	}
	shared, err := k.ECDH(p)
	if err != nil {
		return err
	}
	salt, key := s.split(shared)
	s.salt, s.key, s.counter = salt, newGCM(key), 0
	return nil
}

func (s *waSession) encrypt(plain []byte) []byte {
	ct := s.key.Seal(nil, nonce(s.counter), plain, s.hash)
	s.counter++
	s.mixHash(ct)
	return ct
}

func (s *waSession) decrypt(ct []byte) ([]byte, error) {
	plain, err := s.key.Open(nil, nonce(s.counter), ct, s.hash)
	s.counter++
	if err != nil {
		return nil, err
	}
	s.mixHash(ct)
	return plain, nil
}

// handshake runs the responder side of Noise XX: e, ee, s, es from the
// server; s, se from the client; then the two transport keys.
func (s *waSession) handshake(static *keys.KeyPair, certChain []byte) error {
	s.hash = []byte(socket.NoiseStartPattern) // exactly 32 bytes: used as is
	s.salt = s.hash
	s.key = newGCM(s.hash)
	s.mixHash(socket.WAConnHeader)

	frame, err := s.readFrame()
	if err != nil {
		return err
	}
	var hello waWa6.HandshakeMessage
	if err := proto.Unmarshal(frame, &hello); err != nil {
		return fmt.Errorf("client hello: %w", err)
	}
	clientEph := hello.GetClientHello().GetEphemeral()
	if len(clientEph) != 32 {
		return fmt.Errorf("client hello: ephemeral key of %d bytes", len(clientEph))
	}
	s.mixHash(clientEph)

	eph := keys.NewKeyPair()
	s.mixHash(eph.Pub[:])
	if err := s.mixDH(eph.Priv, (*[32]byte)(clientEph)); err != nil {
		return err
	}
	encStatic := s.encrypt(static.Pub[:])
	if err := s.mixDH(static.Priv, (*[32]byte)(clientEph)); err != nil {
		return err
	}
	encCert := s.encrypt(certChain)
	out, err := proto.Marshal(&waWa6.HandshakeMessage{ServerHello: &waWa6.HandshakeMessage_ServerHello{
		Ephemeral: eph.Pub[:], Static: encStatic, Payload: encCert,
	}})
	if err != nil {
		return err
	}
	if err := s.writeFrame(out); err != nil {
		return err
	}

	if frame, err = s.readFrame(); err != nil {
		return err
	}
	var finish waWa6.HandshakeMessage
	if err := proto.Unmarshal(frame, &finish); err != nil {
		return fmt.Errorf("client finish: %w", err)
	}
	clientStatic, err := s.decrypt(finish.GetClientFinish().GetStatic())
	if err != nil || len(clientStatic) != 32 {
		return fmt.Errorf("client finish: static key not readable (%d bytes): %v", len(clientStatic), err)
	}
	if err := s.mixDH(eph.Priv, (*[32]byte)(clientStatic)); err != nil {
		return err
	}
	payload, err := s.decrypt(finish.GetClientFinish().GetPayload())
	if err != nil {
		return fmt.Errorf("client finish: payload not readable: %w", err)
	}
	s.payload = &waWa6.ClientPayload{}
	if err := proto.Unmarshal(payload, s.payload); err != nil {
		return fmt.Errorf("client payload: %w", err)
	}
	s.clientStatic = clientStatic
	clientToServer, serverToClient := s.split(nil)
	s.readKey, s.writeKey = newGCM(clientToServer), newGCM(serverToClient)
	return nil
}

func (s *waSession) readNode() (*waBinary.Node, error) {
	frame, err := s.readFrame()
	if err != nil {
		return nil, err
	}
	plain, err := s.readKey.Open(nil, nonce(s.readCount), frame, nil)
	s.readCount++
	if err != nil {
		return nil, fmt.Errorf("client frame %d not readable: %w", s.readCount, err)
	}
	data, err := waBinary.Unpack(plain)
	if err != nil {
		return nil, fmt.Errorf("client frame %d: %w", s.readCount, err)
	}
	node, err := waBinary.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("client frame %d: %w", s.readCount, err)
	}
	return node, nil
}

func (s *waSession) writeNode(n waBinary.Node) error {
	data, err := waBinary.Marshal(n) // starts with the "not compressed" flag byte
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	ct := s.writeKey.Seal(nil, nonce(s.writeCount), data, nil)
	s.writeCount++
	return s.writeFrame(ct)
}

// newRealClient is an unpaired whatsmeow client on a fresh session store,
// not connected yet.
func newRealClient(t *testing.T, env *testEnv) *whatsmeow.Client {
	t.Helper()
	container, err := openContainer(context.Background(), Session{Path: filepath.Join(env.dbDir, "whatsapp.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { container.Close() })
	return whatsmeow.NewClient(container.NewDevice(), nil)
}

// realClient is an unpaired whatsmeow client connected to a fake WhatsApp
// that names cdn as its only media host, fetching media with an HTTP
// client that trusts cdn's certificate.
func realClient(t *testing.T, env *testEnv, cdn *httptest.Server) (*whatsmeow.Client, *fakeWhatsApp) {
	t.Helper()
	wm := newRealClient(t, env)
	wm.SetMediaHTTPClient(cdn.Client())
	fake := newFakeWhatsApp(t, cdn.Listener.Addr().String())
	fake.connect(t, wm)
	return wm, fake
}
