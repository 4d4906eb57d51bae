package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/tools"
)

// bigFileHost stands in for `botd run` on the IPC side: every fetch_media
// of the family group answers with the one file the test put in the group
// folder.
type bigFileHost struct{ res tools.FetchMediaResult }

func (h bigFileHost) Handle(_ context.Context, group string, req *tools.Request) (any, *tools.Error) {
	if group != "family" || req.Type != tools.FetchMedia {
		return nil, tools.Errorf(tools.CodeBadRequest, "not served here")
	}
	return h.res, nil
}

// rawMCP speaks Streamable HTTP by hand, so the test can read a response
// body as a stream instead of holding it (32 copies of a 25 MB answer in
// the test process would say nothing about botd).
type rawMCP struct {
	url, token, session string
}

func (c *rawMCP) post(ctx context.Context, id int, method string, params any) (*http.Response, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if id == 0 {
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s: %s", method, resp.Status, b)
	}
	return resp, nil
}

func (c *rawMCP) initialize(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	resp, err := c.post(ctx, 1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "botd-e2e", "version": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.session = resp.Header.Get("Mcp-Session-Id")
	if resp, err = c.post(ctx, 0, "notifications/initialized", nil); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

var linkURI = regexp.MustCompile(`botd://media/[A-Za-z0-9_-]+`)

// fetchLink calls fetch_media and returns the botd:// link it handed out.
func (c *rawMCP) fetchLink(t *testing.T, ref string) string {
	t.Helper()
	resp, err := c.post(context.Background(), 2, "tools/call", map[string]any{"name": "fetch_media", "arguments": map[string]any{"mediaRef": ref}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	uri := linkURI.Find(b)
	if uri == nil {
		t.Fatalf("no resource link in the fetch_media answer: %.2000s", b)
	}
	return string(uri)
}

// readDigest reads uri with resources/read and returns the SHA-256 and
// size of the blob, decoded from the body as it arrives.
func (c *rawMCP) readDigest(ctx context.Context, id int, uri string) (string, int64, error) {
	resp, err := c.post(ctx, id, "resources/read", map[string]any{"uri": uri})
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	const marker = `"blob":"`
	var window []byte
	for !bytes.HasSuffix(window, []byte(marker)) {
		b, err := br.ReadByte()
		if err != nil {
			return "", 0, fmt.Errorf("no blob in the answer (%q…): %w", window, err)
		}
		if window = append(window, b); len(window) > 4096 {
			window = window[len(window)-len(marker):]
		}
	}
	h := sha256.New()
	n, err := io.Copy(h, base64.NewDecoder(base64.StdEncoding, &untilQuote{r: br}))
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// untilQuote reads up to the closing quote of a JSON string (base64 has
// no escapes).
type untilQuote struct {
	r    *bufio.Reader
	rest []byte
	done bool
}

func (u *untilQuote) Read(p []byte) (int, error) {
	for len(u.rest) == 0 {
		if u.done {
			return 0, io.EOF
		}
		s, err := u.r.ReadSlice('"')
		switch {
		case err == nil:
			u.rest, u.done = s[:len(s)-1], true
		case errors.Is(err, bufio.ErrBufferFull):
			u.rest = s
		default:
			return 0, fmt.Errorf("the blob ends without its quote: %w", err)
		}
	}
	n := copy(p, u.rest)
	u.rest = u.rest[n:]
	return n, nil
}

// The red team's attack on the shared HTTP server: 32 resources/read of a
// 19 MB file at once. Each read streams the file into its response, so
// `botd mcp --http` stays small (it took 2.6 GB when each read held the
// file, its base64 and its JSON), and every client gets the exact bytes.
func TestResourcesReadOfALargeFileInParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("32 reads of a 19 MB file")
	}
	const (
		size     = 19 << 20
		parallel = 32
		goalMB   = 300
	)
	dir := t.TempDir()
	data := make([]byte, size)
	rand.Read(data)
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	rel := "media/tg_bigArchive01_archive.bin"
	writeFile(t, filepath.Join(dir, "groups", "family", filepath.FromSlash(rel)), string(data))
	data = nil

	addr := freeAddr(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mcpHTTPConfig, addr))
	host := ipc.NewHost(ipc.HostOptions{Types: tools.IPCTypes(), Root: filepath.Join(dir, "data", "ipc"), Groups: []string{"family"},
		Handler: bigFileHost{tools.FetchMediaResult{Ref: "tg_bigArchive01", Kind: "Document", Name: "archive.bin",
			MIME: "application/octet-stream", Size: size, SHA256: want, Path: rel, Cached: true}}})
	ctx, cancel := context.WithCancel(context.Background())
	if err := host.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); host.Wait() })
	// The host stands in for `botd run`, so it holds the data folder.
	lock, err := lockDataDir(filepath.Join(dir, "data"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })

	// Without the race detector, whose shadow memory would make the peak meaningless.
	p := startBin(t, plainBotd(t), dir, "mcp", "--http", "--config", "botd.yaml")
	c := &rawMCP{url: "http://" + servedAddr(t, p) + "/mcp", token: "family-token-0123456789"}
	c.initialize(t)
	uri := c.fetchLink(t, "tg_bigArchive01")
	base := vmHWM(t, p.cmd.Process.Pid) >> 10

	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang guard
	defer rcancel()
	var wg sync.WaitGroup
	errs := make([]error, parallel)
	for i := range parallel {
		wg.Go(func() {
			got, n, err := c.readDigest(rctx, 10+i, uri)
			if err == nil && (got != want || n != size) {
				err = fmt.Errorf("got %d bytes with sha256 %s, want %d with %s", n, got, size, want)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	peak := vmHWM(t, p.cmd.Process.Pid) >> 10
	t.Logf("botd mcp --http: peak RSS %d MB after %d parallel reads of a %d MB file (%d MB before them)", peak, parallel, size>>20, base)
	if peak > goalMB {
		t.Errorf("peak RSS %d MB, want at most %d MB", peak, goalMB)
	}
	p.stop(t)
}
