package modelview

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/store"
	registry "github.com/botd-dev/botd/tools"
	"github.com/botd-dev/botd/transcribe"
)

// closedURL is a base URL nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func TestForModel(t *testing.T) {
	group := filepath.Join(t.TempDir(), "groups", "family")
	base := closedURL(t)
	_, httpErr := http.Post(base+"/v1/audio/transcriptions", "text/plain", strings.NewReader("x"))
	_, pathErr := os.Open("/etc/botd-secret-dir/none.txt")
	_, inGroupErr := os.Open(filepath.Join(group, "media", "missing.pdf"))
	tgURL := "https://api.telegram.org/file/bot123456:SECRET-token/documents/file_7.pdf"
	resetErr, resetEnds := resetWrite(t)
	for _, tc := range []struct {
		name         string
		err          error
		keep, reject []string
	}{
		{"a failed request (*url.Error)", httpErr, []string{"Post to the provider", "connection refused"},
			[]string{base, strings.TrimPrefix(base, "http://"), "/v1/audio"}},
		{"a host path (*os.PathError)", pathErr, []string{"open (a host path)", "no such file"}, []string{"/etc/botd-secret-dir"}},
		{"a path in the group folder stays, relative", inGroupErr, []string{"open media/missing.pdf"}, []string{group}},
		{"a wrapped chain", fmt.Errorf("downloading tg_x failed: %w", fmt.Errorf("telegram: %w", &urlErrorLike{tgURL, pathErr})),
			[]string{"downloading tg_x failed: telegram:", "the provider"}, []string{"SECRET-token", "api.telegram.org", "/etc/botd-secret-dir"}},
		{"an ipc error carrying both", registry.Errorf(registry.CodeDownloadFailed, "saving into %s: %v", "/var/lib/botd/data/media/ab12", httpErr),
			[]string{"saving into (a host path)", "Post to the provider"}, []string{"/var/lib/botd", base}},
		{"a write the provider reset (*net.OpError)", fmt.Errorf("transcribing: %w", resetErr),
			[]string{"transcribing: write tcp: "}, resetEnds},
		{"an address with a port anywhere", errors.New("provider at 10.1.2.3:8443 and [::1]:9000 answered 502"),
			[]string{"provider at (an address) and (an address) answered 502"}, []string{"10.1.2.3", "8443", "::1", "9000"}},
		{"a lookup", fmt.Errorf("Get %q: dial tcp: lookup api.example.internal on 10.0.0.2:53: no such host", "https://api.example.internal/v1"),
			[]string{"Get to the provider: dial tcp: lookup: no such host"}, []string{"example.internal", "10.0.0.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("the error to rewrite did not happen")
			}
			got := ModelError(tc.err, group)
			for _, k := range tc.keep {
				if !strings.Contains(got, k) {
					t.Errorf("%q lacks %q (from %q)", got, k, tc.err)
				}
			}
			for _, r := range tc.reject {
				if strings.Contains(got, r) {
					t.Errorf("%q still holds %q", got, r)
				}
			}
		})
	}
}

// resettingProvider is an address that accepts connections, reads a
// little and resets them.
func resettingProvider(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 512))
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// resetWrite is the error of a write into a connection the far end reset,
// as net writes it (`write tcp A->B: …`), and the two addresses it names.
func resetWrite(t *testing.T) (error, []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := <-accepted
	if srv == nil {
		t.Fatal("nothing accepted")
	}
	srv.(*net.TCPConn).SetLinger(0) // close with RST
	srv.Close()
	buf := make([]byte, 64<<10)
	for range 1000 {
		if _, err = c.Write(buf); err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "->") {
		t.Fatalf("want a write error naming both ends, got %v", err)
	}
	return err, []string{c.LocalAddr().String(), ln.Addr().String(), "127.0.0.1"}
}

// urlErrorLike reads like a *url.Error of a GET to u.
type urlErrorLike struct {
	u   string
	err error
}

func (e *urlErrorLike) Error() string { return fmt.Sprintf("Get %q: %v", e.u, e.err) }

// Through the tool: a fetch the host refused with a host path and a
// provider URL in its message, and a voice note whose transcription failed
// against a provider on a closed port, reach the model without either.
func TestToolErrorsReachTheModelWithoutHostDetails(t *testing.T) {
	base := closedURL(t) + "/v1"
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tr, err := transcribe.New(transcribe.Options{Name: "local", Type: "openai", BaseURL: base, APIKey: "sk-test", Model: "whisper-1", DB: st.DB})
	if err != nil {
		t.Fatal(err)
	}
	voice := append([]byte("OggS"), make([]byte, 4096)...)
	_, trErr := tr.Transcribe(context.Background(), strings.NewReader(string(voice)), int64(len(voice)), "voice.ogg", "audio/ogg")
	if trErr == nil || !strings.Contains(trErr.Error(), strings.TrimPrefix(base, "http://")) {
		t.Fatalf("want a transcription error naming the provider's address, got %v", trErr)
	}

	h := newFakeHost(t, "family")
	addFile(t, h, "tg_voiceNote1", "Voice", "", "audio/ogg", "media/tg_voiceNote1_voice.ogg", voice, "")
	h.mu.Lock()
	m := h.media["tg_voiceNote1"]
	m.res.TranscriptNote = "Transcribing it failed: " + trErr.Error()
	h.media["tg_voiceNote1"] = m
	h.mu.Unlock()
	c := connect(t, newTestServer(t, h, 1<<20))
	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_voiceNote1"})
	texts, _, _ := parts(t, res)
	out := strings.Join(texts, "\n")
	if !strings.Contains(out, "Transcribing it failed") || strings.Contains(out, strings.TrimPrefix(base, "http://")) {
		t.Errorf("the transcription note the model reads names the provider or lost its reason:\n%s", out)
	}

	// A provider that takes the connection and resets it mid-upload: the
	// error names both ends of the connection (`write tcp A->B`, or a read).
	rst := resettingProvider(t)
	tr2, err := transcribe.New(transcribe.Options{Name: "reset", Type: "openai", BaseURL: "http://" + rst + "/v1", APIKey: "sk-test", Model: "whisper-1", DB: st.DB})
	if err != nil {
		t.Fatal(err)
	}
	big := append([]byte("OggS"), make([]byte, 4<<20)...)
	_, rstErr := tr2.Transcribe(context.Background(), strings.NewReader(string(big)), int64(len(big)), "voice.ogg", "audio/ogg")
	if rstErr == nil {
		t.Fatal("a transcription against a resetting provider succeeded")
	}
	_, rstPort, _ := net.SplitHostPort(rst)
	h.mu.Lock()
	m = h.media["tg_voiceNote1"]
	m.res.TranscriptNote = "Transcribing it failed: " + rstErr.Error()
	h.media["tg_voiceNote1"] = m
	h.err = registry.Errorf(registry.CodeDownloadFailed, "downloading tg_voiceNote3 failed: %v", rstErr)
	h.mu.Unlock()
	for _, ref := range []string{"tg_voiceNote1", "tg_voiceNote3"} {
		res = callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": ref})
		texts, _, _ = parts(t, res)
		out = strings.Join(texts, "\n")
		if strings.Contains(out, ":"+rstPort) || strings.Contains(out, "127.0.0.1") {
			t.Errorf("%s: the model reads the provider's address (from %q):\n%s", ref, rstErr, out)
		}
	}
	h.mu.Lock()
	h.err = nil
	h.mu.Unlock()

	_, pathErr := os.Open("/srv/botd-host/data/media/none")
	h.mu.Lock()
	h.err = registry.Errorf(registry.CodeDownloadFailed, "downloading tg_voiceNote2 failed: %v (via %s)", pathErr, base+"/files")
	h.mu.Unlock()
	res = callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_voiceNote2"})
	texts, _, _ = parts(t, res)
	out = strings.Join(texts, "\n")
	if !res.IsError || !strings.Contains(out, "[download_failed]") {
		t.Fatalf("want a download_failed tool error, got %s", out)
	}
	for _, leak := range []string{"/srv/botd-host", strings.TrimPrefix(base, "http://")} {
		if strings.Contains(out, leak) {
			t.Errorf("the tool error the model reads holds %q:\n%s", leak, out)
		}
	}
}
