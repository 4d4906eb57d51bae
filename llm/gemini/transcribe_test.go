package gemini

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// pseudoRandom is n bytes that base64 cannot shortcut, the same for a seed.
func pseudoRandom(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestBase64Reader(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, 3071, 3072, 3073, 3 * 1024 * 5, 10_000} {
		src := pseudoRandom(uint64(n), n)
		// One byte at a time, to cross every block boundary.
		got, err := io.ReadAll(iotest.OneByteReader(newBase64Reader(iotest.HalfReader(bytes.NewReader(src)))))
		if err != nil || string(got) != base64.StdEncoding.EncodeToString(src) {
			t.Errorf("%d bytes: %d bytes of base64, %v", n, len(got), err)
		}
	}
	boom := errors.New("disk gone")
	if _, err := io.ReadAll(newBase64Reader(iotest.ErrReader(boom))); !errors.Is(err, boom) {
		t.Errorf("read error = %v, want %v", err, boom)
	}
}

func TestAspectRatio(t *testing.T) {
	for size, want := range map[string]string{"1024x1024": "1:1", "1536x1024": "3:2", "1024x1536": "2:3", "1280x720": "16:9",
		"720x1280": "9:16", "auto": "", "": "", "2560x1080": "21:9"} {
		if got := aspectRatio(size); got != want {
			t.Errorf("%q: %q, want %q", size, got, want)
		}
	}
}
