package modelview

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/ipc"
	registry "github.com/botd-dev/botd/tools"
)

// fileHandler is an registry.Handler that "downloads" one image into the group
// folder, standing in for the media service.
type fileHandler struct {
	groupsDir string
	data      []byte
}

func (f fileHandler) Handle(_ context.Context, group string, req *registry.Request) (any, *registry.Error) {
	if req.Type != registry.FetchMedia {
		return nil, registry.Errorf(registry.CodeBadRequest, "unsupported %s", req.Type)
	}
	var a registry.FetchMediaArgs
	if err := json.Unmarshal(req.Args, &a); err != nil {
		return nil, registry.Errorf(registry.CodeBadRequest, "%v", err)
	}
	if a.MediaRef != "tg_ThroughIpc01" {
		return nil, registry.Errorf(registry.CodeNotFound, "no media %s", a.MediaRef)
	}
	rel := "media/tg_ThroughIpc01.png"
	p := filepath.Join(f.groupsDir, group, rel)
	if err := os.WriteFile(p, f.data, 0o640); err != nil {
		return nil, registry.Errorf(registry.CodeInternal, "%v", err)
	}
	return registry.FetchMediaResult{Ref: a.MediaRef, Kind: "Image", MIME: "image/png", Size: int64(len(f.data)), Path: rel}, nil
}

// ipcServer wires the MCP server to a real ipc.Client and ipc.Host over
// temp folders, as `botd run` + `botd mcp --group family` would.
func ipcServer(t testing.TB, data []byte) *Session {
	t.Helper()
	root := t.TempDir()
	ipcRoot, groupsDir := filepath.Join(root, "ipc"), filepath.Join(root, "groups")
	if err := os.MkdirAll(filepath.Join(groupsDir, "family", "media"), 0o750); err != nil {
		t.Fatal(err)
	}
	g := &groups.Group{Folder: "family", Name: "Family", Chat: "telegram:-100"}
	lay := ipc.GroupLayout(ipcRoot, g.Folder)
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	host := ipc.NewHost(ipc.HostOptions{Types: registry.IPCTypes(), Root: ipcRoot, Groups: []string{g.Folder},
		Handler: fileHandler{groupsDir: groupsDir, data: data}, Log: testLoggerB()})
	ctx, cancel := context.WithCancel(context.Background())
	if err := host.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cl := ipc.NewClient(lay, registry.IPCTypes())
	t.Cleanup(func() { cancel(); host.Wait(); cl.Close() })
	tl, err := New(Options{GroupDir: filepath.Join(groupsDir, "family"), Caller: cl, Log: testLoggerB(), CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func TestFetchThroughRealIPC(t *testing.T) {
	src := encodePNG(t, gradient(40, 30))
	tl := ipcServer(t, src)
	req := registry.Args(map[string]any{"mediaRef": "tg_ThroughIpc01"})
	start := time.Now()
	res, err := fetchMCP(tl, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fetch_media through ipc.Client + ipc.Host: %v", time.Since(start))
	texts, images, _ := parts(t, res)
	if res.IsError || len(images) != 1 {
		t.Fatalf("error=%v %q", res.IsError, texts)
	}
	if got, _ := base64.StdEncoding.DecodeString(images[0].Data); !bytes.Equal(got, src) {
		t.Error("image bytes differ after the IPC round trip")
	}
	req = map[string]any{"mediaRef": "tg_NotThere0001"}
	res, _ = fetchMCP(tl, context.Background(), req)
	if texts, _, _ := parts(t, res); !res.IsError || !bytes.Contains([]byte(texts[0]), []byte("[not_found]")) {
		t.Errorf("typed error lost across IPC: %q", texts)
	}
}

func BenchmarkFetchMediaInline10KBOverIPC(b *testing.B) {
	tl := ipcServer(b, tenKBPNG(b))
	req := registry.Args(map[string]any{"mediaRef": "tg_ThroughIpc01"})
	b.ReportAllocs()
	for b.Loop() {
		res, err := fetchMCP(tl, context.Background(), req)
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
	}
}
