// Package bucket holds the settings of an S3-compatible bucket and the
// rule for its endpoint, apart from package s3store so that checking a
// config links no S3 client.
package bucket

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Config is media.store for type s3.
type Config struct {
	// Endpoint is the server's URL: https://s3.eu-central-1.amazonaws.com,
	// http://127.0.0.1:9000. Without a scheme, https.
	Endpoint  string
	Bucket    string
	Region    string // default us-east-1
	Prefix    string // key prefix, e.g. "botd/"; a trailing slash is added
	AccessKey string
	SecretKey string
	// PathStyle addresses the bucket in the path (MinIO, most
	// self-hosted servers) rather than in the host name.
	PathStyle bool
	// PublicEndpoint, when set, is the URL presigned links name instead of
	// Endpoint: what clients elsewhere reach the server by (botd may talk
	// to it on a private address). Signing is local; nothing is sent to it.
	PublicEndpoint string
}

// ParseEndpoint reads media.store.endpoint: an http(s) URL of a host,
// without path, query or credentials.
func ParseEndpoint(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("s3 store: no endpoint")
	}
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("s3 store: endpoint: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("s3 store: endpoint %q: the scheme must be http or https", s)
	case u.Host == "":
		return nil, fmt.Errorf("s3 store: endpoint %q has no host", s)
	case u.User != nil:
		return nil, fmt.Errorf("s3 store: endpoint %q: put the credentials in access_key and secret_key", u.Redacted())
	case strings.Trim(u.Path, "/") != "" || u.RawQuery != "":
		return nil, fmt.Errorf("s3 store: endpoint %q: only scheme and host (the bucket goes in bucket, a folder in prefix)", s)
	}
	return u, nil
}
