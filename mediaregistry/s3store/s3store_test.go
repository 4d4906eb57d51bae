package s3store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/mediaregistry/s3store"
	"github.com/botd-dev/botd/mediaregistry/s3store/s3test"
)

func blob(data []byte, mime, name string) mediaregistry.ObjectInfo {
	s := sha256.Sum256(data)
	return mediaregistry.ObjectInfo{SHA256: hex.EncodeToString(s[:]), Size: int64(len(data)), MIME: mime, Name: name}
}

func TestStoreRoundTrip(t *testing.T) {
	srv := s3test.Start(t)
	st := srv.NewStore(t, "roundtrip")
	ctx := context.Background()
	tests := []struct {
		name string
		data []byte
		mime string
		file string
	}{
		{"small text", []byte("hello bucket"), "text/plain", "hello.txt"},
		{"name outside ASCII", []byte("grüße"), "text/plain", "Grüße an Oma, 🎂.txt"},
		// Past one part: the multipart path, streamed from a file.
		{"multipart", bytes.Repeat([]byte("0123456789abcdef"), (17<<20)/16), "application/pdf", "big.pdf"},
		{"empty", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := blob(tt.data, tt.mime, tt.file)
			if err := st.Put(ctx, info, bytes.NewReader(tt.data)); err != nil {
				t.Fatal(err)
			}
			r, got, err := st.Get(ctx, info.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(body, tt.data) {
				t.Fatalf("Get: %v, %d bytes, want %d", err, len(body), len(tt.data))
			}
			if got.Size != info.Size || got.Name != tt.file || (tt.mime != "" && got.MIME != tt.mime) {
				t.Fatalf("metadata = %+v, want %+v", got, info)
			}
			if err := st.Delete(ctx, info.SHA256); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Stat(ctx, info.SHA256); !errors.Is(err, mediaregistry.ErrNoObject) {
				t.Fatalf("Stat after Delete = %v, want ErrNoObject", err)
			}
			if err := st.Delete(ctx, info.SHA256); err != nil {
				t.Fatalf("Delete of a missing object: %v", err)
			}
		})
	}
}

// An unreachable server is a failure to retry, never "no such object":
// that would make botd forget bytes the bucket still has.
func TestUnreachableIsNotMissing(t *testing.T) {
	srv := s3test.Start(t)
	st := srv.NewStore(t, "unreachable")
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sha := strings.Repeat("ab", 32)
	_, err := st.Stat(ctx, sha)
	if err == nil || errors.Is(err, mediaregistry.ErrNoObject) {
		t.Fatalf("Stat on a stopped server = %v", err)
	}
	if err := st.Check(ctx); err == nil {
		t.Fatal("Check passed with the server stopped")
	}
}

func TestCheck(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	if err := srv.NewStore(t, "checked").Check(ctx); err != nil {
		t.Fatalf("Check of a writable bucket: %v", err)
	}
	tests := []struct {
		name string
		mod  func(*s3store.Config)
		want string
	}{
		{"missing bucket", func(c *s3store.Config) { c.Bucket = "nosuchbucket" }, "does not exist"},
		{"wrong secret", func(c *s3store.Config) { c.Bucket = "checked"; c.SecretKey = "wrong-secret-0000" }, "checked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := srv.Config("")
			tt.mod(&cfg)
			st, err := s3store.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = st.Check(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// A presigned URL downloads the object without credentials, named and
// typed; once its expiry passes the server refuses it.
func TestPresignedURL(t *testing.T) {
	srv := s3test.Start(t)
	st := srv.NewStore(t, "presign")
	ctx := context.Background()
	data := []byte("%PDF-1.4 a small report")
	info := blob(data, "application/pdf", "report.pdf")
	if err := st.Put(ctx, info, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	long, err := st.PresignGet(ctx, info.SHA256, "report.pdf", "application/pdf", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(long)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("presigned GET: %d %q", resp.StatusCode, body)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "report.pdf") {
		t.Errorf("Content-Disposition = %q", cd)
	}

	// One second of validity: wait for the condition "the server refuses
	// it as expired", with a deadline, rather than sleeping and hoping.
	short, err := st.PresignGet(ctx, info.SHA256, "report.pdf", "application/pdf", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(short)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden {
			if !strings.Contains(strings.ToLower(string(body)), "expired") {
				t.Fatalf("refused, but not as expired: %s", body)
			}
			break
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("presigned GET before expiry: %d %s", resp.StatusCode, body)
		}
		if time.Now().After(deadline) {
			t.Fatal("a URL presigned for 1s was still accepted 30s later")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The long one still works: the refusal was the expiry, not the key.
	resp, err = http.Get(long)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("long-lived URL after the short one expired: %d", resp.StatusCode)
	}
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		host string
	}{
		{"https://s3.eu-central-1.amazonaws.com", true, "s3.eu-central-1.amazonaws.com"},
		{"http://127.0.0.1:9000", true, "127.0.0.1:9000"},
		{"minio.lan:9000", true, "minio.lan:9000"},
		{"http://127.0.0.1:9000/", true, "127.0.0.1:9000"},
		{"", false, ""},
		{"ftp://host", false, ""},
		{"https://host/bucket", false, ""},
		{"https://user:pw@host", false, ""},
	}
	for _, tt := range tests {
		u, err := s3store.ParseEndpoint(tt.in)
		if (err == nil) != tt.ok || (tt.ok && u.Host != tt.host) {
			t.Errorf("ParseEndpoint(%q) = %v, %v", tt.in, u, err)
		}
	}
}

// With a public endpoint, presigned links name it (botd may reach the
// server at a private address) and work there; the store itself keeps
// talking to Endpoint.
func TestPresignedURLPublicEndpoint(t *testing.T) {
	srv := s3test.Start(t)
	srv.NewStore(t, "public") // makes the bucket
	cfg := srv.Config("public")
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	cfg.PublicEndpoint = "http://localhost:" + u.Port()
	st, err := s3store.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := []byte("a photo's bytes")
	info := blob(data, "image/jpeg", "p.jpg")
	if err := st.Put(ctx, info, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	link, err := st.PresignGet(ctx, info.SHA256, "p.jpg", "image/jpeg", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link, cfg.PublicEndpoint+"/") {
		t.Fatalf("link %s does not name the public endpoint %s", link, cfg.PublicEndpoint)
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET through the public endpoint: %d %q", resp.StatusCode, body)
	}
	if _, err := s3store.New(s3store.Config{Endpoint: cfg.Endpoint, Bucket: "b", PublicEndpoint: "ftp://x"}); err == nil {
		t.Error("a public endpoint that is not http(s) was accepted")
	}
}
