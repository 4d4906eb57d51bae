package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	registry "github.com/botd-dev/botd/tools"
)

// A remote MCP client (Streamable HTTP from another machine) cannot open
// the host paths fetch_media reports. With LinkOptions set, every fetched
// file also comes back as a resource_link to botd://media/<id>, which
// resources/read serves from the group folder until it expires — and, with
// the S3 store, as a presigned URL of the bucket's object.

// LinkScheme prefixes the resources of fetched files.
const LinkScheme = "botd://media/"

// Meta keys of the resource link.
const (
	MetaExpires = "botd/expires" // RFC 3339, when the resource and URL stop working
	MetaURL     = "botd/url"     // a presigned download URL (S3 store only)
)

// DefaultLinkTTL is how long a link works when LinkOptions.TTL is zero.
const DefaultLinkTTL = 15 * time.Minute

// MaxResourceBytes bounds a file resources/read returns: its base64 goes
// into one JSON-RPC response, held in memory. Larger files need the
// presigned URL of the S3 store.
const MaxResourceBytes = 32 << 20

// LinkOptions turn on resource links for fetched files (botd mcp --http).
type LinkOptions struct {
	// TTL is how long a link works (default DefaultLinkTTL).
	TTL time.Duration
	// Presign, when set, returns a URL that downloads the blob sha from
	// the object store without credentials for ttl, or an error when the
	// store does not have it (yet).
	Presign func(ctx context.Context, sha, name, mime string, ttl time.Duration) (string, error)
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// link is one fetched file handed out as a resource.
type link struct {
	ws      groups.Workspace // the group folder it is in
	rel     string           // inside the group folder
	sha     string
	mime    string
	size    int64
	expires time.Time
}

// linkTable holds the live links of one client's server: another token
// reaches another server, whose table does not have them.
type linkTable struct {
	o  LinkOptions
	mu sync.Mutex
	m  map[string]link
}

func newLinkTable(o LinkOptions) *linkTable {
	if o.TTL <= 0 {
		o.TTL = DefaultLinkTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &linkTable{o: o, m: map[string]link{}}
}

// add records l under a new unguessable id, dropping expired ones.
func (ls *linkTable) add(l link) (string, time.Time) {
	var b [18]byte
	rand.Read(b[:])
	id := base64.RawURLEncoding.EncodeToString(b[:])
	now := ls.o.Now()
	l.expires = now.Add(ls.o.TTL)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for k, v := range ls.m {
		if !now.Before(v.expires) {
			delete(ls.m, k)
		}
	}
	ls.m[id] = l
	return id, l.expires
}

func (ls *linkTable) get(id string) (link, bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l, ok := ls.m[id]
	if ok && !ls.o.Now().Before(l.expires) {
		delete(ls.m, id)
		return link{}, false
	}
	return l, ok
}

func (t *tools) registerLinks(s *server.MCPServer) {
	if t.links == nil {
		return
	}
	s.AddResourceTemplate(mcpgo.NewResourceTemplate(LinkScheme+"{id}", "fetched media",
		mcpgo.WithTemplateDescription("A file fetch_media saved for this group, readable for a short time after the fetch "+
			"(the fetch_media result links to it).")), t.readLink)
}

// linkResult adds the fetched file to out as a resource link, replacing a
// file:// link a remote client could not open.
func (t *tools) linkResult(ctx context.Context, g *served, out *mcpgo.CallToolResult, res registry.FetchMediaResult) {
	mime := mediaregistry.CleanMIME(res.MIME)
	id, expires := t.links.add(link{ws: g.ws, rel: res.Path, sha: res.SHA256, mime: mime, size: res.Size})
	name := mediaregistry.SafeName(res.Name)
	if name == "" {
		name = res.Path[strings.LastIndexByte(res.Path, '/')+1:]
	}
	l := mcpgo.NewResourceLink(LinkScheme+id, name, "the fetched file: read it with resources/read until "+
		expires.UTC().Format(time.RFC3339), mime)
	meta := map[string]any{MetaExpires: expires.UTC().Format(time.RFC3339)}
	note := fmt.Sprintf("\nRemote clients: the file is the resource %s (resources/read, until %s).", LinkScheme+id, expires.UTC().Format(time.RFC3339))
	if t.links.o.Presign != nil && mediaregistry.ValidSHA256(res.SHA256) {
		u, err := t.links.o.Presign(ctx, res.SHA256, name, mime, t.links.o.TTL)
		if err == nil {
			meta[MetaURL] = u
			note += "\nDownload URL (until then): " + u
		} else {
			t.log.Debug("mcp fetch_media: no presigned URL", "ref", res.Ref, "err", err)
		}
	}
	l.Meta = &mcpgo.Meta{AdditionalFields: meta}
	replaced := false
	for i, c := range out.Content {
		switch v := c.(type) {
		case mcpgo.ResourceLink:
			if strings.HasPrefix(v.URI, "file:") && !replaced {
				out.Content[i], replaced = l, true
			}
		case mcpgo.TextContent:
			if i == 0 {
				v.Text += note
				out.Content[i] = v
			}
		}
	}
	if !replaced {
		out.Content = append(out.Content, l)
	}
}

// errLinkGone is what reading an unknown, expired or other group's link
// says: the three are not told apart.
var errLinkGone = errors.New("no such media resource (links work for a short time after fetch_media, for its own group only): call fetch_media again")

// renders are types a client might execute or render when shown; their
// bytes go out as application/octet-stream.
var renders = map[string]bool{
	"image/svg+xml": true, "text/html": true, "application/xhtml+xml": true, "text/xml": true, "application/xml": true,
	"text/javascript": true, "application/javascript": true, "text/uri-list": true,
}

// readLink is resources/read of a link: the group's copy, opened inside
// the group folder and checked against the size and digest it was fetched
// with.
func (t *tools) readLink(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, LinkScheme)
	if !ok {
		return nil, errLinkGone
	}
	l, ok := t.links.get(id)
	if !ok {
		return nil, errLinkGone
	}
	f, rel, err := l.ws.Open(l.rel)
	if err != nil {
		t.log.Info("mcp resources/read: the fetched file is gone", "path", l.rel, "err", err)
		return nil, fmt.Errorf("the fetched file %s is no longer in the group folder: call fetch_media again", l.rel)
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if fi.Size() > MaxResourceBytes {
		return nil, fmt.Errorf("%s is %s, over the %s a resource may have; with media.store type s3 the fetch_media "+
			"result carries a download URL instead", rel, mediaregistry.FormatSize(fi.Size()), mediaregistry.FormatSize(MaxResourceBytes))
	}
	mime := l.mime
	if mime == "" || renders[mime] {
		mime = "application/octet-stream"
	}
	changed := fmt.Errorf("%s changed since it was fetched: call fetch_media again", rel)
	if bs := blobStreamsFrom(ctx); bs != nil {
		// Over HTTP the file goes to the client as it is written out (see
		// blobstream.go); checked here first, so that a changed file gets
		// this answer rather than a cut connection.
		sum, n, err := fileDigest(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", rel, err)
		}
		if n != fi.Size() || (l.sha != "" && sum != l.sha) {
			return nil, changed
		}
		keep = true
		ph := bs.add(&blobSource{f: f, size: n, sha: sum})
		return []mcpgo.ResourceContents{mcpgo.BlobResourceContents{URI: uri, MIMEType: mime, Blob: ph}}, nil
	}
	blob, sum, err := encodeFile(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if l.sha != "" && sum != l.sha {
		return nil, changed
	}
	return []mcpgo.ResourceContents{mcpgo.BlobResourceContents{URI: uri, MIMEType: mime, Blob: blob}}, nil
}
