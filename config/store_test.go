package config

import (
	"strings"
	"testing"

	"github.com/botd-dev/botd/media"
)

func TestMediaStoreSettings(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown type", `media: {store: {type: gcs}}`, `media.store.type: must be local or s3`},
		{"s3 without endpoint", `media: {store: {type: s3, bucket: b, access_key: a, secret_key: s}}`, `media.store.endpoint: is required`},
		{"s3 endpoint with path", `media: {store: {type: s3, endpoint: "https://h/b", bucket: b, access_key: a, secret_key: s}}`, `media.store.endpoint:`},
		{"s3 without bucket", `media: {store: {type: s3, endpoint: "http://127.0.0.1:9000", access_key: a, secret_key: s}}`, `media.store.bucket: is required`},
		{"s3 secret from an unset variable", `media: {store: {type: s3, endpoint: "http://127.0.0.1:9000", bucket: b, access_key: a, secret_key: "${S3_SECRET}"}}`,
			`media.store.secret_key: is required for type s3: set S3_SECRET`},
		{"typo", `media: {store: {type: s3, bukket: b}}`, `media.store.bukket`},
		{"link ttl past a week", `media: {link_ttl: 200h}`, `media.link_ttl: must be positive and at most 168h`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), noEnv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}

	cfg, err := Parse([]byte(`media: {store: {type: s3, endpoint: "http://127.0.0.1:9000", bucket: media, region: eu-west-1, prefix: botd,
  access_key: "${S3_KEY}", secret_key: "${S3_SECRET}", path_style: true}}`), envOf(map[string]string{"S3_KEY": "k", "S3_SECRET": "s"}))
	if err != nil {
		t.Fatal(err)
	}
	s3 := Section[media.Config](cfg).Store.S3()
	if s3.Bucket != "media" || s3.SecretKey != "s" || !s3.PathStyle || s3.Region != "eu-west-1" || s3.Prefix != "botd" {
		t.Errorf("parsed %+v", s3)
	}
	def, err := Parse(nil, noEnv)
	if err != nil || Section[media.Config](def).Store.Type != media.StoreLocal || Section[media.Config](def).LinkTTL.D() <= 0 {
		t.Fatalf("defaults: %+v %v", Section[media.Config](def).Store, err)
	}
	// The bucket settings may stay while the type is local (for
	// `botd media migrate --to local`); they are not checked then.
	if _, err := Parse([]byte(`media: {store: {type: local, endpoint: "http://127.0.0.1:9000", bucket: b}}`), noEnv); err != nil {
		t.Fatalf("local with bucket settings kept: %v", err)
	}
}
