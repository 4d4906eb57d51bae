package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/ffmpeg/ffmpegtest"
	"github.com/botd-dev/botd/internal/testwait"
)

const playlistConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
media:
  transcription: {provider: fake, model: whisper-test}
channels:
  telegram: {enabled: true, token: "%s", api_url: "%s"}
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
agent:
  run_timeout: 1m
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
`

// Issue 38, item 4, against the real botd run: files that make ffmpeg
// open other files by name — the 174-byte clip.mp4 that is an HLS playlist
// (a binary comment line, so the declared video/mp4 wins) as a document
// and as a video message (whose sound is transcribed), a master playlist
// naming another group's media playlist, and a reference movie — posted
// at once and fetched in one turn. Each tool result refuses in a
// sentence, no still is shown, nothing is transcribed, and the other
// group's files they name are never opened by botd or any child (inotify
// on their folder). With the arguments before the fix, the same test
// sees secret.ts opened, stills shown and its sound transcribed.
func TestRedTeamPlaylistsPosingAsVideos(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	outside := t.TempDir()
	secretTS, secretMP4 := filepath.Join(outside, "secret.ts"), filepath.Join(outside, "secret.mp4")
	red := []string{"-f", "lavfi", "-i", "color=c=red:s=64x48:d=3", "-f", "lavfi", "-i", "sine=f=440:d=3", "-shortest", "-c:v", "libx264", "-c:a", "aac"}
	ffmpegtest.Make(t, secretTS, red...)
	ffmpegtest.Make(t, secretMP4, red...)
	blue := filepath.Join(t.TempDir(), "blue.mp4")
	ffmpegtest.Make(t, blue, "-f", "lavfi", "-i", "color=c=blue:s=64x48:d=3", "-c:v", "libx264")
	b, err := os.ReadFile(blue)
	if err != nil {
		t.Fatal(err)
	}
	refMovie, err := ffmpegtest.ExternalDref(b, secretMP4)
	if err != nil {
		t.Fatal(err)
	}
	hls := ffmpegtest.DisguisedHLS(secretTS)
	// A master playlist naming a media playlist beside the secret video.
	variant := filepath.Join(outside, "secret.m3u8")
	writeFile(t, variant, "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:3,\nsecret.ts\n#EXT-X-ENDLIST\n")
	master := []byte("#EXTM3U\n#\x01\x02\x03\xfe\xff\n#EXT-X-STREAM-INF:BANDWIDTH=1000\n" + variant + "\n")
	t.Logf("the playlist is %d bytes", len(hls))

	dir := t.TempDir()
	tg := telegramtest.New(t)
	chat := newFetchAllModel(t)
	var transcriptions atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/audio/transcriptions") {
			transcriptions.Add(1)
			fmt.Fprint(w, `{"text":"the other group's words"}`)
			return
		}
		chat.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(playlistConfig, telegramtest.Token, tg.URL(), srv.URL))
	group, ann := telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann")
	docs := []struct{ name, mime string }{{"clip.mp4", "video/mp4"}, {"stream.mp4", "video/mp4"}, {"movie.mov", "video/quicktime"}}
	for i, d := range [][]byte{hls, master, refMovie} {
		id := fmt.Sprintf("f%d", i)
		tg.AddFile(telegramtest.File{ID: id, Data: d})
		tg.Enqueue(docUpdate(-100, 10+i, id, docs[i].name, docs[i].mime, int64(len(d))))
	}
	tg.AddFile(telegramtest.File{ID: "v1", Data: hls})
	tg.Enqueue(models.Update{Message: &models.Message{ID: 20, Chat: group, From: &ann, Date: int(time.Now().Unix()),
		Video: &models.Video{FileID: "v1", FileUniqueID: "v1u", Duration: 3, Width: 64, Height: 48, FileName: "holiday.mp4", MimeType: "video/mp4", FileSize: int64(len(hls))}}})

	p := startBin(t, plainBotd(t), dir, "run", "--config", "botd.yaml")
	p.waitLog(t, "botd running")
	testwait.Within(t, 60*time.Second, "tg.Pending() == 0", func() bool { return tg.Pending() == 0 })
	opens := ffmpegtest.WatchOpens(t, outside)
	cpu0 := childCPU(t, p.cmd.Process.Pid)
	q := telegramtest.Text(group, ann, 100, "@Andy read them all")
	q.Message.Date = int(time.Now().Unix())
	tg.Enqueue(q)
	testwait.Within(t, 3*time.Minute, "an answer in chat -100", func() bool {
		for _, s := range tg.Sent() {
			if s.ChatID == -100 && s.Text == "Read." {
				return true
			}
		}
		return false
	})
	t.Logf("the children's CPU, all four files: %v", childCPU(t, p.cmd.Process.Pid)-cpu0)
	t.Logf("botd run peak RSS: %d MB", vmHWM(t, p.cmd.Process.Pid)>>10)
	for _, c := range childPeaks(p.Logs()) {
		t.Logf("child %s: peak RSS %d MB (an upper bound: botd's own at the fork), %s", c.name, c.kb>>10, c.outcome)
	}

	if got := opens.Opened(t); len(got) > 0 {
		t.Errorf("the other group's files were opened: %v", got)
	}
	if n := transcriptions.Load(); n != 0 {
		t.Errorf("%d transcriptions of a playlist's sound", n)
	}
	results := chat.toolResults()
	if len(results) != 4 {
		t.Fatalf("%d tool results, want 4:\n%s", len(results), strings.Join(results, "\n---\n"))
	}
	hlsRefused := regexp.MustCompile(`No frames of the video are shown: this video's container \(hls\) is not one botd reads`)
	for _, want := range []struct {
		name string
		says *regexp.Regexp
	}{
		{"clip.mp4", hlsRefused},
		{"stream.mp4", hlsRefused},
		{"movie.mov", regexp.MustCompile(`No frames of the video are shown: this video keeps its pictures or sound in other files it names`)},
		{"holiday.mp4", hlsRefused},
		{"holiday.mp4", regexp.MustCompile(`not transcribed: this video's container \(hls\) is not one botd reads`)},
	} {
		found := false
		for _, r := range results {
			found = found || strings.Contains(r, want.name) && want.says.MatchString(r)
		}
		if !found {
			t.Errorf("%s: no tool result says %q; results:\n%s", want.name, want.says, strings.Join(results, "\n---\n"))
		}
	}
	for _, r := range results {
		if strings.Contains(r, "Shown:") || strings.Contains(r, "other group's words") {
			t.Errorf("a result shows what the file named:\n%s", r)
		}
	}
	p.stop(t)
}

// childCPU is the user and system time of pid's children that it waited
// for (/proc/pid/stat's cutime and cstime): here botd's box children.
func childCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:])) // after "pid (comm) "
	u, _ := strconv.Atoi(f[13])                                    // field 16, cutime
	s, _ := strconv.Atoi(f[14])                                    // field 17, cstime
	return time.Duration(u+s) * time.Second / 100                  // USER_HZ
}
