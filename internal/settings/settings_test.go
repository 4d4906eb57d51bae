package settings

import (
	"errors"
	"fmt"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestProblems(t *testing.T) {
	var ps Problems
	if ps.Err() != nil {
		t.Fatal("no problem must be a nil error")
	}
	ps.Add("media.max_disk_bytes", "must be at least twice %s", "max_download_bytes")
	ps.CheckURL("channels.slack.api_url", "ftp://x")
	ps.CheckURL("channels.slack.api_url", "https://slack.com/api/")
	ps.CheckURL("channels.slack.api_url", "")
	wrapped := fmt.Errorf("config: %w", ps.Err())
	got := Of(wrapped)
	want := []string{"media.max_disk_bytes: must be at least twice max_download_bytes",
		`channels.slack.api_url: must be an http(s) URL, got "ftp://x"`}
	if len(got) != len(want) {
		t.Fatalf("Of = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("problem %d = %q, want %q", i, got[i], want[i])
		}
	}
	if p := Of(errors.New("disk full")); len(p) != 1 || p[0].String() != "disk full" {
		t.Errorf("Of(plain error) = %v", p)
	}
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Duration
		ok   bool
	}{{"30m", Duration(30 * 60e9), true}, {" 24h ", Duration(24 * 3600e9), true}, {"soon", 0, false}} {
		var d Duration
		err := yaml.Unmarshal([]byte("v: "+tt.in), &struct {
			V *Duration `yaml:"v"`
		}{&d})
		if (err == nil) != tt.ok || d != tt.want {
			t.Errorf("%q: %v, %v; want %v (ok %v)", tt.in, d, err, tt.want, tt.ok)
		}
	}
}
