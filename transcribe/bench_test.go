package transcribe_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/botd-dev/botd/transcribe"
)

// BenchmarkTranscriptCacheHit is the cost of a voice note fetched again:
// hashing its bytes and one SQLite lookup, no provider call. 32 KiB is
// about 15 s of a Telegram voice note (OGG/Opus), 1 MiB about 8 minutes.
func BenchmarkTranscriptCacheHit(b *testing.B) {
	for _, size := range []int{32 << 10, 1 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			f := newFakeOpenAI(b, jsonAnswer(`{"text":"Bring milk and bread on the way home, please.","language":"english","duration":15.2}`))
			tr := newT(b, transcribe.Options{BaseURL: f.URL, Model: "whisper-1", DB: newDB(b)})
			audio := audioBytes(uint64(size), size)
			r := bytes.NewReader(audio)
			ctx := context.Background()
			if _, err := tr.Transcribe(ctx, r, int64(size), "", "audio/ogg"); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				got, err := tr.Transcribe(ctx, r, int64(size), "", "audio/ogg")
				if err != nil || !got.Cached {
					b.Fatalf("Transcribe = %+v, %v; want a cache hit", got, err)
				}
			}
			if n := f.calls.Load(); n != 1 {
				b.Errorf("provider calls = %d, want 1", n)
			}
		})
	}
}
