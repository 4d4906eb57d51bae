package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: any bytes yield either a config or Problems, never a panic,
// and every problem names what is wrong.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", "config.example.yaml")); err == nil {
		f.Add(b)
	}
	f.Add([]byte("assistant_name: ${NAME:-Andy}\ngroups: [{folder: a, chat: 'telegram:1'}]"))
	f.Add([]byte("media: {ref_ttl: soon}\nchannels: {telegram: {tokne: x}}"))
	f.Add([]byte("a: &x [1]\nb: *x"))
	f.Add([]byte("- 1\n- 2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := Parse(b, func(k string) (string, bool) { return "v-" + k, true })
		if err == nil {
			if cfg == nil {
				t.Fatal("nil config without error")
			}
			return
		}
		var ps Problems
		if !errors.As(err, &ps) || len(ps) == 0 {
			t.Fatalf("error is not Problems: %v", err)
		}
		for _, p := range ps {
			if p.Msg == "" {
				t.Fatalf("empty problem at %q", p.Path)
			}
		}
	})
}
