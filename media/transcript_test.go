package media_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/ffmpeg/ffmpegtest"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/transcribe"
)

// oggVoice is the start of an OGG/Opus voice note as Telegram sends it.
var oggVoice = []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x13OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00 and more audio")

// A voice note fetched is transcribed once: the second fetch (and any
// later one, across restarts) reads the transcript from the cache.
func TestVoiceNoteIsTranscribedOnce(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/audio/transcriptions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, "wrong request", http.StatusBadRequest)
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got, _ := io.ReadAll(f)
		if string(got) != string(oggVoice) || r.FormValue("model") != "whisper-test" {
			http.Error(w, "wrong audio or model", http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"text": "Pick up <milk> & bread, please."})
	}))
	defer srv.Close()
	r := mediatest.NewWith(t, mediatest.MaxDownload, func(o *media.Options) {
		tr, err := transcribe.New(transcribe.Options{Name: "local", Type: "openai", BaseURL: srv.URL + "/v1", APIKey: "test-key",
			Model: "whisper-test", DB: o.Cache.DB()})
		if err != nil {
			t.Fatal(err)
		}
		o.Transcriber = tr
	})
	ref := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Voice, MIME: "audio/ogg"}, chantest.Media{Data: oggVoice})
	c := r.Client("family")
	for i, wantNote := range []string{"Transcript by whisper-test.", "Transcript by whisper-test (transcribed before)."} {
		var res tools.FetchMediaResult
		if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref}, &res); err != nil {
			t.Fatalf("fetch %d: %v", i+1, err)
		}
		if res.Transcript != "Pick up <milk> & bread, please." || res.TranscriptNote != wantNote {
			t.Errorf("fetch %d: transcript %q, note %q", i+1, res.Transcript, res.TranscriptNote)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the provider was asked %d times, want once", n)
	}
}

// Without media.transcription, a voice note is still saved, and the answer
// says how to get its words.
func TestVoiceNoteWithoutTranscriptionSaysHowToConfigureIt(t *testing.T) {
	r := mediatest.New(t)
	ref := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Voice, MIME: "audio/ogg"}, chantest.Media{Data: oggVoice})
	var res tools.FetchMediaResult
	if err := mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Transcript != "" || !strings.Contains(res.TranscriptNote, "media.transcription") || res.Path == "" {
		t.Errorf("result %+v", res)
	}
}

// A video's sound, taken out with ffmpeg, is transcribed like a voice note.
func TestVideoSoundIsTranscribed(t *testing.T) {
	ffmpegtest.Install(t, "", `printf 'OggS the sound track' > "$out"`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if got, _ := io.ReadAll(f); string(got) != "OggS the sound track" {
			http.Error(w, "not the sound track", http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"text": "Happy birthday!"})
	}))
	defer srv.Close()
	r := mediatest.NewWith(t, mediatest.MaxDownload, func(o *media.Options) {
		tr, err := transcribe.New(transcribe.Options{Type: "openai", BaseURL: srv.URL, APIKey: "k", Model: "whisper-test", DB: o.Cache.DB()})
		if err != nil {
			t.Fatal(err)
		}
		o.Transcriber = tr
	})
	ref := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Video, MIME: "video/mp4"},
		chantest.Media{Data: []byte("\x00\x00\x00\x18ftypmp42 a party")})
	var res tools.FetchMediaResult
	if err := mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Transcript != "Happy birthday!" || !strings.HasPrefix(res.TranscriptNote, "What is said in the video.") {
		t.Errorf("transcript %q, note %q", res.Transcript, res.TranscriptNote)
	}
}

// A transcription is billed to the group that asked, by the seconds the
// provider heard at the model's per-minute price; a cached one is free,
// and a failed call is recorded as failed.
func TestTranscriptionIsBilled(t *testing.T) {
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"text": "See you at nine.", "language": "english", "duration": 90})
	}))
	defer srv.Close()
	var bill *store.Store
	r := mediatest.NewWith(t, mediatest.MaxDownload, func(o *media.Options) {
		tr, err := transcribe.New(transcribe.Options{Name: "oa", Type: "openai", BaseURL: srv.URL + "/v1", APIKey: "test-key",
			Model: "whisper-1", DB: o.Cache.DB()})
		if err != nil {
			t.Fatal(err)
		}
		o.Transcriber = tr
		bill = &store.Store{DB: o.Cache.DB()}
		o.Bill = bill
	})
	ref := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Voice, MIME: "audio/ogg"}, chantest.Media{Data: oggVoice})
	c := r.Client("family")
	for range 2 {
		var res tools.FetchMediaResult
		if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref}, &res); err != nil || res.Transcript == "" {
			t.Fatalf("fetch: %v %+v", err, res)
		}
	}
	fail.Store(true)
	other := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Voice, MIME: "audio/ogg"}, chantest.Media{Data: append([]byte(nil), append(oggVoice, '!')...)})
	var res tools.FetchMediaResult
	if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: other}, &res); err != nil || !strings.Contains(res.TranscriptNote, "failed") {
		t.Fatalf("failing fetch: %v %+v", err, res)
	}
	rows, err := bill.Usage(context.Background(), "", time.Time{}, time.UTC)
	if err != nil || len(rows) != 1 {
		t.Fatalf("usage %+v %v", rows, err)
	}
	u := rows[0]
	// 90 s at $0.006 a minute is $0.009: 900,000 micro-cents.
	if u.Folder != "family" || u.Model != "whisper-1" || u.Attempts != 2 || u.Failed != 1 || u.HeardSeconds != 90 || u.CostMicrocents != 900_000 {
		t.Errorf("bill %+v: want family, whisper-1, 2 calls (1 failed), 90 s heard, 900000 micro-cents", u)
	}
}
