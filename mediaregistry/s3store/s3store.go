// Package s3store keeps media blobs in an S3-compatible bucket (AWS S3,
// MinIO, Ceph, R2, versitygw…) through minio-go: content-addressed keys
// (<prefix><sha256>), the blob's metadata on the object, streaming both
// ways, and presigned URLs for clients that cannot reach botd's disk.
package s3store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/mediaregistry/s3store/bucket"
)

// Config is media.store for type s3 (package bucket, which links no
// S3 client, so the media section can be checked without one).
type Config = bucket.Config

// partSize is the multipart part size: the most a transfer buffers when
// its source cannot be read at offsets. 16 MiB keeps 50 GB objects within
// S3's 10,000 parts and memory flat.
const partSize = 16 << 20

// maxNameRunes bounds the name kept on an object (escaped, a rune takes up
// to 12 bytes).
const maxNameRunes = 120

// Metadata keys on each object (sent as x-amz-meta-*).
const (
	metaSHA256 = "Sha256"
	metaName   = "Name"
)

// Store is a bucket as a mediaregistry.ObjectStore.
type Store struct {
	c      *minio.Client
	signer *minio.Client // presigns links; c unless PublicEndpoint is set
	bucket string
	prefix string
	id     string
}

var _ mediaregistry.ObjectStore = (*Store)(nil)

// New returns the store; it does no I/O (Check does).
func New(cfg Config) (*Store, error) {
	u, err := ParseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Bucket == "" {
		return nil, errors.New("s3 store: no bucket")
	}
	region := cfg.Region
	if region == "" {
		// Named, so that signing never asks the server for the bucket's
		// location first (one request less, and presigning stays local).
		region = "us-east-1"
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	newClient := func(u *url.URL) (*minio.Client, error) {
		return minio.New(u.Host, &minio.Options{
			Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
			Secure:       u.Scheme == "https",
			Region:       region,
			BucketLookup: lookup,
			// A failed upload is retried by botd's own queue, with backoff and
			// a record of the error; the client's retries would hide it.
			MaxRetries: 1,
		})
	}
	c, err := newClient(u)
	if err != nil {
		return nil, fmt.Errorf("s3 store: %w", err)
	}
	signer := c
	if cfg.PublicEndpoint != "" {
		pu, err := ParseEndpoint(cfg.PublicEndpoint)
		if err != nil {
			return nil, fmt.Errorf("public endpoint: %w", err)
		}
		if signer, err = newClient(pu); err != nil {
			return nil, fmt.Errorf("s3 store: public endpoint: %w", err)
		}
	}
	prefix := strings.TrimLeft(cfg.Prefix, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Store{c: c, signer: signer, bucket: cfg.Bucket, prefix: prefix,
		id: "s3://" + u.Host + "/" + cfg.Bucket + "/" + prefix}, nil
}

// ParseEndpoint reads media.store.endpoint (bucket.ParseEndpoint).
func ParseEndpoint(s string) (*url.URL, error) { return bucket.ParseEndpoint(s) }

// ID names bucket and prefix: blobs recorded under another ID are
// uploaded again.
func (s *Store) ID() string { return s.id }

// Key is the object key of a blob.
func (s *Store) Key(sha string) string { return s.prefix + sha }

// Put streams info.Size bytes of r to the object, with the blob's
// metadata. An *os.File source is read at offsets, part by part, without
// buffering.
func (s *Store) Put(ctx context.Context, info mediaregistry.ObjectInfo, r io.Reader) error {
	if !mediaregistry.ValidSHA256(info.SHA256) {
		return fmt.Errorf("s3 store: bad digest %q", info.SHA256)
	}
	ct := info.MIME
	if ct == "" {
		ct = "application/octet-stream"
	}
	meta := map[string]string{metaSHA256: info.SHA256}
	if name := []rune(info.Name); len(name) > 0 {
		// Object metadata is ASCII, and its headers have 2 KB in all;
		// names from chats are neither.
		meta[metaName] = url.PathEscape(string(name[:min(len(name), maxNameRunes)]))
	}
	_, err := s.c.PutObject(ctx, s.bucket, s.Key(info.SHA256), r, info.Size, minio.PutObjectOptions{
		ContentType:  ct,
		UserMetadata: meta,
		PartSize:     partSize,
		NumThreads:   1,
	})
	if err != nil {
		return fmt.Errorf("s3 store: put %s: %w", info.SHA256, err)
	}
	return nil
}

// Get opens the object as a stream.
func (s *Store) Get(ctx context.Context, sha string) (io.ReadCloser, mediaregistry.ObjectInfo, error) {
	if !mediaregistry.ValidSHA256(sha) {
		return nil, mediaregistry.ObjectInfo{}, fmt.Errorf("s3 store: %q: %w", sha, mediaregistry.ErrNoObject)
	}
	obj, err := s.c.GetObject(ctx, s.bucket, s.Key(sha), minio.GetObjectOptions{})
	if err != nil {
		return nil, mediaregistry.ObjectInfo{}, s.wrap("get", sha, err)
	}
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, mediaregistry.ObjectInfo{}, s.wrap("get", sha, err)
	}
	return obj, info(sha, st), nil
}

// Stat reads the object's metadata.
func (s *Store) Stat(ctx context.Context, sha string) (mediaregistry.ObjectInfo, error) {
	if !mediaregistry.ValidSHA256(sha) {
		return mediaregistry.ObjectInfo{}, fmt.Errorf("s3 store: %q: %w", sha, mediaregistry.ErrNoObject)
	}
	st, err := s.c.StatObject(ctx, s.bucket, s.Key(sha), minio.StatObjectOptions{})
	if err != nil {
		return mediaregistry.ObjectInfo{}, s.wrap("stat", sha, err)
	}
	return info(sha, st), nil
}

// Delete removes the object; S3 answers a missing one with success.
func (s *Store) Delete(ctx context.Context, sha string) error {
	if !mediaregistry.ValidSHA256(sha) {
		return nil
	}
	if err := s.c.RemoveObject(ctx, s.bucket, s.Key(sha), minio.RemoveObjectOptions{}); err != nil {
		return s.wrap("delete", sha, err)
	}
	return nil
}

// PresignGet is a URL that downloads the object without credentials until
// expiry passes, offered as a file named name of type mimeType. Signing is
// local: it neither reaches the server nor proves the object exists.
func (s *Store) PresignGet(ctx context.Context, sha, name, mimeType string, expiry time.Duration) (string, error) {
	if !mediaregistry.ValidSHA256(sha) {
		return "", fmt.Errorf("s3 store: bad digest %q", sha)
	}
	q := url.Values{}
	if mimeType != "" {
		q.Set("response-content-type", mimeType)
	}
	if name != "" {
		q.Set("response-content-disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	}
	u, err := s.signer.PresignedGetObject(ctx, s.bucket, s.Key(sha), expiry, q)
	if err != nil {
		return "", fmt.Errorf("s3 store: presign %s: %w", sha, err)
	}
	return u.String(), nil
}

// Check proves the bucket is reachable and writable with these
// credentials: it writes, reads back and deletes a small probe object
// under the prefix.
func (s *Store) Check(ctx context.Context) error {
	ok, err := s.c.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("bucket %q cannot be reached: %w", s.bucket, err)
	}
	if !ok {
		return fmt.Errorf("bucket %q does not exist", s.bucket)
	}
	var nonce [8]byte
	rand.Read(nonce[:])
	key := s.prefix + ".botd-check-" + hex.EncodeToString(nonce[:])
	body := "botd config check " + strconv.FormatInt(time.Now().Unix(), 10)
	if _, err := s.c.PutObject(ctx, s.bucket, key, strings.NewReader(body), int64(len(body)),
		minio.PutObjectOptions{ContentType: "text/plain"}); err != nil {
		return fmt.Errorf("bucket %q is not writable: %w", s.bucket, err)
	}
	defer s.c.RemoveObject(context.WithoutCancel(ctx), s.bucket, key, minio.RemoveObjectOptions{})
	obj, err := s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return fmt.Errorf("bucket %q: reading back the probe: %w", s.bucket, err)
	}
	defer obj.Close()
	got, err := io.ReadAll(io.LimitReader(obj, 1024))
	if err != nil {
		return fmt.Errorf("bucket %q: reading back the probe: %w", s.bucket, err)
	}
	if string(got) != body {
		return fmt.Errorf("bucket %q: the probe read back differs from what was written", s.bucket)
	}
	if err := s.c.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("bucket %q: deleting the probe: %w", s.bucket, err)
	}
	return nil
}

// MakeBucket creates the bucket unless it exists (tests, first setup).
func (s *Store) MakeBucket(ctx context.Context) error {
	ok, err := s.c.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("s3 store: %w", err)
	}
	if ok {
		return nil
	}
	if err := s.c.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{}); err != nil {
		return fmt.Errorf("s3 store: make bucket %q: %w", s.bucket, err)
	}
	return nil
}

func (s *Store) wrap(op, sha string, err error) error {
	r := minio.ToErrorResponse(err)
	if r.Code == minio.NoSuchKey || r.StatusCode == http.StatusNotFound && r.Code != minio.NoSuchBucket {
		return fmt.Errorf("s3 store: %s %s: %w", op, sha, mediaregistry.ErrNoObject)
	}
	return fmt.Errorf("s3 store: %s %s: %w", op, sha, err)
}

func info(sha string, st minio.ObjectInfo) mediaregistry.ObjectInfo {
	i := mediaregistry.ObjectInfo{SHA256: sha, Size: st.Size, MIME: st.ContentType}
	if n := st.UserMetadata[metaName]; n != "" {
		if dec, err := url.PathUnescape(n); err == nil {
			i.Name = dec
		}
	}
	return i
}
