package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/media/mediahost"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/modelview"
	"github.com/botd-dev/botd/store"
	registry "github.com/botd-dev/botd/tools"
)

// BenchmarkFetchMediaEndToEnd is fetch_media of a cached image through
// every real layer but the process boundary: MCP tool call → IPC request
// file → host watcher → media service (registry, cache) → response file →
// MCP image content. "in-process" is an MCP server over the media
// service's in-process caller (no IPC files); "agent" is the built-in
// agent's path: modelview's Session called directly over that caller (no
// MCP at all). Reports p50/p99 per call.
func BenchmarkFetchMediaEndToEnd(b *testing.B) {
	for _, tc := range []struct {
		name string
		side int
		path string // "ipc", "in-process" or "agent"
	}{{"cached-10KB", 58, "ipc"}, {"cached-1MB", 590, "ipc"}, {"in-process-cached-10KB", 58, "in-process"}, {"agent-cached-10KB", 58, "agent"}} {
		b.Run(tc.name, func(b *testing.B) {
			img := noisyPNG(tc.side)
			call, ref := e2eRig(b, img, tc.path)
			ctx := context.Background()
			if err := call(ctx, ref); err != nil {
				b.Fatalf("warm-up fetch: %v", err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.SetBytes(int64(len(img)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := call(ctx, ref); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(len(img)), "img-bytes")
		})
	}
}

func noisyPNG(side int) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.IntN(256))
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

// e2eRig serves fetch_media over IPC files (external MCP clients), or
// in-process over the media service's Caller, through an MCP server or
// directly (the built-in agent). call fetches ref once and checks that an
// image came back.
func e2eRig(b *testing.B, img []byte, path string) (call func(ctx context.Context, ref string) error, id string) {
	b.Helper()
	root := b.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(context.Background(), filepath.Join(root, "botd.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	reg := mediaregistry.New(st.DB, time.Hour)
	cache, err := mediaregistry.OpenCache(filepath.Join(root, "media"), st.DB, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	set, _ := groups.NewSet("Andy", []groups.Group{{Folder: "family", Chat: "telegram:-100", RequiresTrigger: true}})
	groupsDir := filepath.Join(root, "groups")
	g, _ := set.ByFolder("family")
	if _, err := groups.EnsureWorkspace(groupsDir, g); err != nil {
		b.Fatal(err)
	}
	tg := chantest.New("telegram")
	ref := &mediaregistry.MediaReference{Chat: "telegram:-100", Kind: mediaregistry.Image, MIME: "image/png", FileName: "photo.png",
		Size: int64(len(img)), Private: []byte("bench-file")}
	if err := reg.Register(context.Background(), ref); err != nil {
		b.Fatal(err)
	}
	tg.Serve("bench-file", chantest.Media{Data: img})
	svc := mediahost.New(mediahost.Options{Groups: set, Log: quiet, Media: media.New(media.Options{Registry: reg, Cache: cache,
		Channels: map[string]channels.Channel{"telegram": tg}, Groups: set, GroupsDir: groupsDir, MaxDownloadBytes: 100 << 20, Log: quiet})})
	ipcRoot := filepath.Join(root, "ipc")
	ctx, cancel := context.WithCancel(context.Background())
	host := ipc.NewHost(ipc.HostOptions{Types: registry.IPCTypes(), Root: ipcRoot, Groups: []string{"family"}, Handler: svc, Log: quiet})
	if err := host.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); host.Wait() })
	ic := ipc.NewClient(ipc.GroupLayout(ipcRoot, "family"), registry.IPCTypes())
	b.Cleanup(func() { ic.Close() })
	var caller mcp.Caller = ic
	if path != "ipc" {
		caller = svc.Caller("family")
	}
	if path == "agent" {
		s, err := modelview.New(modelview.Options{GroupDir: filepath.Join(groupsDir, "family"), InlineMaxBytes: 2 << 20, Caller: caller, Log: quiet})
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context, ref string) error {
			r := s.Run(ctx, registry.FetchMedia, registry.Args{"mediaRef": ref})
			if r.IsError || len(r.Parts) != 2 || r.Parts[1].Saved == "" {
				return fmt.Errorf("fetch: %+v", r)
			}
			return nil
		}, ref.ID
	}
	srv, err := mcp.NewServer(mcp.Options{GroupDir: filepath.Join(groupsDir, "family"), InlineMaxBytes: 2 << 20, Caller: caller, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.NewInProcessClient(srv.MCPServer)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context, ref string) error {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = registry.FetchMedia
		req.Params.Arguments = map[string]any{"mediaRef": ref}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return err
		}
		if res.IsError || len(res.Content) != 2 {
			return fmt.Errorf("fetch: %+v", res)
		}
		return nil
	}, ref.ID
}
