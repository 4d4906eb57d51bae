package whatsapp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mdp/qrterminal/v3"
	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/types/events"
)

// LoginOptions configures Login.
type LoginOptions struct {
	// Session is the session store; use SessionFor with botd's config so
	// the daemon finds the device later.
	Session Session
	// Phone, as "+<country><number>", asks for an 8-character pairing code
	// to type on the phone instead of a QR code.
	Phone string
	// Out receives the QR code and instructions (the terminal).
	Out io.Writer
	// Timeout bounds the whole pairing; 0 means 3 minutes (WhatsApp stops
	// offering codes after about 160 s anyway).
	Timeout time.Duration
	// Log receives whatsmeow's diagnostics; nil discards them.
	Log *slog.Logger

	// connectTimeout bounds reaching WhatsApp's websocket (default 30 s);
	// dial replaces the network dial, tlsConfig the system's trust. All
	// exist for tests.
	connectTimeout time.Duration
	dial           func(ctx context.Context, network, addr string) (net.Conn, error)
	tlsConfig      *tls.Config
}

// Login pairs this botd with a WhatsApp account, as a linked device, and
// stores the session. It prints a QR code (or a pairing code with Phone)
// to Out and returns when pairing succeeded, failed or timed out, each
// with a message that tells the user what happened.
func Login(ctx context.Context, opts LoginOptions) error {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	if opts.Session == (Session{}) {
		return errors.New("whatsapp login: no session store")
	}
	phone, err := normalisePhone(opts.Phone)
	if err != nil {
		return err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	connectTimeout := opts.connectTimeout
	if connectTimeout <= 0 {
		connectTimeout = 30 * time.Second
	}

	container, err := openContainer(ctx, opts.Session, opts.Log)
	if err != nil {
		return fmt.Errorf("whatsapp login: %w", err)
	}
	defer container.Close()
	dev, err := container.GetFirstDevice(ctx)
	if err != nil {
		return fmt.Errorf("whatsapp login: read session in %s: %w", opts.Session, err)
	}
	if dev.ID != nil {
		fmt.Fprintf(out, "Already paired as %s (session %s).\nTo pair again, remove this linked device on the phone (Settings → Linked devices) and run the login again.\n",
			dev.ID.ToNonAD(), opts.Session)
		return nil
	}

	cli := whatsmeow.NewClient(dev, newWALogger(opts.Log, "Login"))
	dialer := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = dialer.DialContext
	if opts.dial != nil {
		transport.DialContext = opts.dial
	}
	if opts.tlsConfig != nil {
		transport.TLSClientConfig = opts.tlsConfig
	}
	transport.TLSHandshakeTimeout = connectTimeout
	cli.SetPreLoginHTTPClient(&http.Client{Transport: transport})

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	loggedIn := make(chan struct{}, 1)
	loggedOut := make(chan struct{}, 1)
	cli.AddEventHandler(func(raw any) {
		switch raw.(type) {
		case *events.Connected:
			select {
			case loggedIn <- struct{}{}:
			default:
			}
		case *events.LoggedOut:
			select {
			case loggedOut <- struct{}{}:
			default:
			}
		}
	})
	qr, err := cli.GetQRChannel(ctx)
	if err != nil {
		return fmt.Errorf("whatsapp login: %w", err)
	}
	if err := connectBounded(ctx, cli, connectTimeout); err != nil {
		return err
	}
	defer cli.Disconnect()

	codeShown := false
	for {
		select {
		case item, ok := <-qr:
			if !ok {
				return loginTimeout(ctx, timeout)
			}
			switch item.Event {
			case whatsmeow.QRChannelEventCode:
				if phone != "" {
					if codeShown {
						continue
					}
					code, err := cli.PairPhone(ctx, phone, true, whatsmeow.PairClientChrome, "Chrome (Linux)")
					if err != nil {
						return fmt.Errorf("whatsapp login: requesting a pairing code for %s failed: %w", phone, err)
					}
					codeShown = true
					fmt.Fprintf(out, "On the phone with %s: WhatsApp → Settings → Linked devices → Link a device → Link with phone number instead, then enter:\n\n    %s\n\n", phone, code)
					continue
				}
				fmt.Fprintf(out, "Scan this QR code in WhatsApp → Settings → Linked devices → Link a device (renews in %s):\n", item.Timeout)
				qrterminal.GenerateHalfBlock(item.Code, qrterminal.L, out)
			case whatsmeow.QRChannelSuccess.Event:
				fmt.Fprintln(out, "Paired. Finishing the first login…")
				return finishLogin(ctx, cli, out, loggedIn, loggedOut)
			case whatsmeow.QRChannelTimeout.Event:
				return errors.New("whatsapp login: pairing timed out: no device was linked before WhatsApp stopped offering codes; run `botd whatsapp login` again")
			case whatsmeow.QRChannelEventError:
				return fmt.Errorf("whatsapp login: pairing failed: %w", item.Error)
			case whatsmeow.QRChannelClientOutdated.Event:
				return errors.New("whatsapp login: WhatsApp rejected this client version as outdated; update botd")
			case whatsmeow.QRChannelEventPasskeyRequest, whatsmeow.QRChannelEventPasskeyResponse:
				// Answering needs a WebAuthn authenticator, which a terminal
				// does not have; whatsmeow has also replaced the secret the
				// codes shown so far were made with, so they cannot succeed.
				return errors.New("whatsapp login: WhatsApp asked to link this device with a passkey, which botd cannot do; run `botd whatsapp login` again and scan the QR code, or link with a pairing code (--phone +NUMBER)")
			case whatsmeow.QRChannelScannedWithoutMultidevice.Event:
				fmt.Fprintln(out, "The code was scanned by a phone without multi-device support; update WhatsApp on the phone and scan again.")
			default:
				return fmt.Errorf("whatsapp login: unexpected pairing state %q; run the login again", item.Event)
			}
		case <-loggedOut:
			return errors.New("whatsapp login: the device was logged out during pairing; run `botd whatsapp login` again")
		case <-ctx.Done():
			return loginTimeout(ctx, timeout)
		}
	}
}

// connectBounded dials WhatsApp but gives up after d whatever the network
// does, so a black-holed connection cannot hang the CLI.
func connectBounded(ctx context.Context, cli *whatsmeow.Client, d time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cli.ConnectContext(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("whatsapp login: gave up connecting to WhatsApp: %w", ctx.Err())
		}
		// The dial and TLS handshake have timeouts of d too, started a
		// little later than cctx: an error that comes once d is over is
		// that same timeout, reported the same way whichever timer the
		// scheduler ran first.
		if dl, _ := cctx.Deadline(); !time.Now().Before(dl) {
			return fmt.Errorf("whatsapp login: timed out after %s connecting to WhatsApp (web.whatsapp.com); check the network connection or proxy: %w", d, err)
		}
		return fmt.Errorf("whatsapp login: cannot reach WhatsApp (web.whatsapp.com); check the network connection or proxy: %w", err)
	case <-cctx.Done():
		// The socket lives on ctx, which the caller cancels on return;
		// that also ends the dial still running in the goroutine.
		if ctx.Err() != nil {
			return fmt.Errorf("whatsapp login: gave up connecting to WhatsApp (web.whatsapp.com): %w", ctx.Err())
		}
		return fmt.Errorf("whatsapp login: timed out after %s connecting to WhatsApp (web.whatsapp.com); check the network connection or proxy", d)
	}
}

func loginTimeout(ctx context.Context, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("whatsapp login: pairing timed out after %s; run `botd whatsapp login` again", timeout)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("whatsapp login: cancelled: %w", ctx.Err())
	}
	return errors.New("whatsapp login: pairing ended without linking a device; run `botd whatsapp login` again")
}

// finishLogin waits for the login that follows pairing, so the session is
// complete when the CLI exits.
func finishLogin(ctx context.Context, cli *whatsmeow.Client, out io.Writer, in, loggedOut <-chan struct{}) error {
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	id := "this account"
	if j := cli.Store.GetJID(); !j.IsEmpty() {
		id = "+" + j.User
	}
	select {
	case <-in:
		fmt.Fprintf(out, "WhatsApp login complete: linked to %s. Start the daemon with `botd run`.\n", id)
		return nil
	case <-loggedOut:
		return errors.New("whatsapp login: paired, but the phone logged the device out right away; run `botd whatsapp login` again")
	case <-t.C:
	case <-ctx.Done():
	}
	fmt.Fprintf(out, "Paired with %s; the first login did not finish yet, the daemon will complete it on start.\n", id)
	return nil
}

// normalisePhone accepts "+49 171 234-5678" style numbers and returns the
// digits; an empty phone means QR pairing.
func normalisePhone(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", nil
	}
	if !strings.HasPrefix(p, "+") {
		return "", fmt.Errorf("whatsapp login: phone %q must be international, starting with + and the country code", p)
	}
	var b strings.Builder
	for _, r := range p[1:] {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == ' ' || r == '-' || r == '(' || r == ')' || r == '.':
		default:
			return "", fmt.Errorf("whatsapp login: phone %q has an unexpected character %q", p, r)
		}
	}
	d := b.String()
	if len(d) < 7 || len(d) > 15 || d[0] == '0' {
		return "", fmt.Errorf("whatsapp login: phone %q is not a valid international number", p)
	}
	return d, nil
}
