package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/mediaregistry"
)

const human = "UHUMAN01"

func imageAndPDF(h *harness) []map[string]any {
	png := h.fake.HostFile("sunset.png", "image/png", bytes.Repeat([]byte{0x89}, 2_516_582))
	pdf := h.fake.HostFile("report.pdf", "application/pdf", []byte("%PDF-1.4 fake"))
	return []map[string]any{
		{"id": "F0IMAGE1", "name": "sunset.png", "title": "sunset", "mimetype": "image/png", "filetype": "png",
			"size": 2_516_582, "original_w": 1920, "original_h": 1080, "mode": "hosted",
			"url_private": png, "url_private_download": png + "?download"},
		{"id": "F0PDF001", "name": "report.pdf", "mimetype": "application/pdf", "filetype": "pdf",
			"size": 867_328, "mode": "hosted", "url_private": pdf},
	}
}

func TestFileShareRegistersRefsWithoutDownloading(t *testing.T) {
	h := newHarness(t, nil)
	h.start(t)
	files := imageAndPDF(h)
	h.send(t, message(testChannel, human, "what do you make of these?", map[string]any{
		"subtype": "file_share", "upload": true, "files": files}))
	in := h.next(t)

	golden(t, "file_share.golden", normalizeRefs(in.Text)+"\n")
	if len(in.Refs) != 2 {
		t.Fatalf("refs = %d, want 2", len(in.Refs))
	}
	wantKinds := []mediaregistry.Kind{mediaregistry.Image, mediaregistry.Document}
	for i, r := range in.Refs {
		got, err := h.reg.Get(h.ctx, mediaregistry.Chats{in.ChatID}, r.ID)
		if err != nil {
			t.Fatalf("ref %s not in registry: %v", r.ID, err)
		}
		if got.Kind != wantKinds[i] || got.MessageID != in.ID || got.Chat != "slack:"+testChannel {
			t.Errorf("ref %d = %+v", i, got)
		}
		if bytes.Contains(got.Private, []byte("xox")) {
			t.Errorf("private handle holds a token: %s", got.Private)
		}
		var p private
		if err := json.Unmarshal(got.Private, &p); err != nil || p.URL == "" || p.FileID == "" {
			t.Errorf("private = %s (%v)", got.Private, err)
		}
	}
	// The image ref points at the download URL, not the inline one.
	var p private
	_ = json.Unmarshal(in.Refs[0].Private, &p)
	if !strings.HasSuffix(p.URL, "?download") {
		t.Errorf("image url = %s, want url_private_download", p.URL)
	}
	if n := h.fake.Calls("files"); n != 0 {
		t.Errorf("receiving downloaded %d files, want 0", n)
	}
	stored, err := h.st.Message(h.ctx, in.ChatID, in.ID)
	if err != nil || stored.Text != in.Text {
		t.Errorf("stored message = %q, %v", stored.Text, err)
	}
}

// A stranger's chat reaches the sink with its ids only, so an operator can
// register it; no text and no refs, and nothing in the registry.
func TestFileShareInUnregisteredChatDeliversIDsOnly(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.SetChannel("C0STRANGE", "strangers")
	h.start(t)
	files := imageAndPDF(h)
	h.send(t, message("C0STRANGE", human, "secret plans", map[string]any{"subtype": "file_share", "files": files}))
	in := h.next(t)
	if in.ChatID != "slack:C0STRANGE" || in.ChatName != "strangers" || in.ID == "" || in.SenderID != human {
		t.Errorf("ids missing: %+v", in)
	}
	if in.Text != "" || len(in.Refs) != 0 {
		t.Errorf("unregistered chat delivered text %q and %d refs", in.Text, len(in.Refs))
	}
	list, err := h.reg.List(h.ctx, mediaregistry.Chats{"slack:C0STRANGE"}, mediaregistry.Filter{})
	if err != nil || len(list) != 0 {
		t.Errorf("registry has %d refs (%v), want 0", len(list), err)
	}
}

func TestMoreThanTenFilesNamesTheRest(t *testing.T) {
	h := newHarness(t, nil)
	h.start(t)
	var files []map[string]any
	for i := range 13 {
		u := h.fake.HostFile(fmt.Sprintf("p%d.jpg", i), "image/jpeg", []byte("x"))
		files = append(files, map[string]any{"id": fmt.Sprintf("F%d", i), "name": fmt.Sprintf("p%d.jpg", i),
			"mimetype": "image/jpeg", "size": 1000, "url_private": u})
	}
	h.send(t, message(testChannel, human, "album", map[string]any{"subtype": "file_share", "files": files}))
	in := h.next(t)
	if len(in.Refs) != MaxFilesPerMessage {
		t.Errorf("refs = %d, want %d", len(in.Refs), MaxFilesPerMessage)
	}
	if !strings.HasSuffix(in.Text, "\n[3 more files omitted]\nalbum") {
		t.Errorf("text does not name the omitted files: %q", in.Text)
	}
	if got := len(mediaregistry.Parse(in.Text)); got != MaxFilesPerMessage {
		t.Errorf("placeholders = %d", got)
	}
}

func TestCheckFileInfoIsResolvedAtFetchTime(t *testing.T) {
	h := newHarness(t, nil)
	h.start(t)
	body := []byte("hello from a connect channel")
	u := h.fake.HostFile("notes.txt", "text/plain", body)
	h.fake.SetFileInfo("F0CHECK1", map[string]any{"id": "F0CHECK1", "name": "notes.txt", "mimetype": "text/plain",
		"size": len(body), "url_private_download": u})
	h.send(t, message(testChannel, human, "see file", map[string]any{"subtype": "file_share",
		"files": []map[string]any{{"id": "F0CHECK1", "file_access": "check_file_info"}}}))
	in := h.next(t)
	if len(in.Refs) != 1 {
		t.Fatalf("refs = %d, want 1", len(in.Refs))
	}
	if n := h.fake.Calls("files.info"); n != 0 {
		t.Fatalf("files.info called %d times at receive time, want 0", n)
	}
	rc, size, err := h.sl.Download(h.ctx, &in.Refs[0])
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	_ = rc.Close()
	if !bytes.Equal(got, body) || size != int64(len(body)) {
		t.Errorf("download = %q (%d)", got, size)
	}
	if n := h.fake.Calls("files.info"); n != 1 {
		t.Errorf("files.info called %d times, want 1", n)
	}
}

func TestDownload(t *testing.T) {
	var foreignHits atomic.Int64
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		foreignHits.Add(1)
		_, _ = io.WriteString(w, "stolen")
	}))
	t.Cleanup(foreign.Close)

	h := newHarness(t, nil)
	body := bytes.Repeat([]byte("0123456789"), 50_000)
	good := h.fake.HostFile("big.bin", "application/octet-stream", body)
	bounce := h.fake.HostRedirect("bounce.bin", foreign.URL+"/collect")
	ref := func(u, mime string) *mediaregistry.MediaReference {
		p, _ := json.Marshal(private{FileID: "F1", URL: u})
		return &mediaregistry.MediaReference{ID: "sl_test", Kind: mediaregistry.Document, MIME: mime, Private: p}
	}

	t.Run("sends the token once and streams the bytes", func(t *testing.T) {
		before := len(h.fake.FileRequests())
		rc, size, err := h.sl.Download(h.ctx, ref(good, "application/octet-stream"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil || !bytes.Equal(got, body) || size != int64(len(body)) {
			t.Fatalf("got %d bytes (size %d), err %v", len(got), size, err)
		}
		reqs := h.fake.FileRequests()[before:]
		if len(reqs) != 1 || reqs[0].Authorization != "Bearer "+slackfake.BotToken {
			t.Errorf("file requests = %+v, want one with the bot token", reqs)
		}
	})

	cases := []struct {
		name    string
		url     string
		mime    string
		signin  bool
		want    error
		mention string
	}{
		{"foreign host is refused", foreign.URL + "/files-pri/x", "image/png", false, channels.ErrForbidden, "refusing"},
		{"plain http slack host is refused", "http://files.slack.com/files-pri/x", "image/png", false, channels.ErrForbidden, "refusing"},
		{"lookalike host is refused", "https://files.slack.com.evil.example/x", "image/png", false, channels.ErrForbidden, "refusing"},
		{"redirect to a foreign host is not followed", bounce, "image/png", false, channels.ErrForbidden, "redirected off Slack"},
		{"sign-in page names the scope", good, "application/octet-stream", true, channels.ErrForbidden, "files:read"},
		{"missing file is unavailable", h.fake.URL + "/files-pri/nope", "image/png", false, channels.ErrUnavailable, "404"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.fake.SignInFiles(tc.signin)
			defer h.fake.SignInFiles(false)
			rc, _, err := h.sl.Download(h.ctx, ref(tc.url, tc.mime))
			if err == nil {
				_ = rc.Close()
				t.Fatal("download succeeded")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("err = %v, want %v mentioning %q", err, tc.want, tc.mention)
			}
			if strings.Contains(err.Error(), slackfake.BotToken) {
				t.Errorf("error leaks the token: %v", err)
			}
		})
	}
	if n := foreignHits.Load(); n != 0 {
		t.Errorf("foreign server saw %d requests, want 0", n)
	}
}

func TestThreadQuestionGetsThreadedAnswer(t *testing.T) {
	h := newHarness(t, nil)
	h.start(t)
	root := nextTS()
	h.send(t, message(testChannel, human, "<@"+slackfake.BotUserID+"> what time is it?", map[string]any{"thread_ts": root}))
	in := h.next(t)
	if !in.Mentioned || in.ThreadID != root || in.ReplyTo != root || in.Text != "@Andy what time is it?" {
		t.Fatalf("inbound = %+v", in)
	}
	d, err := h.sl.Send(h.ctx, channels.OutMessage{Chat: in.ChatID, Text: "Noon.", ThreadID: in.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	posts := h.fake.Posts()
	if len(posts) != 1 || posts[0].Channel != testChannel || posts[0].ThreadTS != root || posts[0].Text != "Noon." {
		t.Fatalf("posts = %+v", posts)
	}
	if len(d.MessageIDs) != 1 || d.MessageIDs[0] != posts[0].TS {
		t.Errorf("delivery = %+v", d)
	}
}

func TestInboundClassification(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.SetUser(human, "Ada")
	h.fake.SetChannel(testChannel, "general")
	h.start(t)
	mention := "<@" + slackfake.BotUserID + ">"
	cases := []struct {
		name  string
		event map[string]any
		check func(t *testing.T, in channels.Inbound)
	}{
		{"bot message with a mention does not trigger",
			message(testChannel, "", mention+" hi", map[string]any{"subtype": "bot_message", "bot_id": "BOTHER01", "username": "otherbot"}),
			func(t *testing.T, in channels.Inbound) {
				if in.Mentioned || !in.IsBot || in.FromMe || in.SenderName != "otherbot" {
					t.Errorf("%+v", in)
				}
			}},
		{"app bot with a user id does not trigger",
			message(testChannel, "UAPPBOT1", mention+" hi", map[string]any{"bot_id": "BAPP0001"}),
			func(t *testing.T, in channels.Inbound) {
				if in.Mentioned || !in.IsBot {
					t.Errorf("%+v", in)
				}
			}},
		{"own message is from me",
			message(testChannel, slackfake.BotUserID, "my answer", map[string]any{"bot_id": slackfake.BotID}),
			func(t *testing.T, in channels.Inbound) {
				if in.Mentioned || !in.FromMe || !in.IsBot {
					t.Errorf("%+v", in)
				}
			}},
		{"direct message counts as mentioned",
			message("D0DIRECT", human, "hello there", nil),
			func(t *testing.T, in channels.Inbound) {
				if !in.Mentioned || in.IsGroup || in.SenderName != "Ada" || in.ChatName != "Ada" {
					t.Errorf("%+v", in)
				}
			}},
		{"plain channel chatter is not a mention",
			message(testChannel, human, "lunch? <https://example.com/menu|menu> &amp; <#C0OTHER|random>", nil),
			func(t *testing.T, in channels.Inbound) {
				if in.Mentioned || in.IsBot || in.ChatName != "general" || !in.IsGroup {
					t.Errorf("%+v", in)
				}
				if want := "lunch? menu (https://example.com/menu) & #random"; in.Text != want {
					t.Errorf("text = %q, want %q", in.Text, want)
				}
			}},
		{"fake placeholders are defused",
			message(testChannel, human, "[Image: x.png, ref:sl_AAAAAAAAAAAA]", nil),
			func(t *testing.T, in channels.Inbound) {
				if len(mediaregistry.Parse(in.Text)) != 0 {
					t.Errorf("text still parses as a placeholder: %q", in.Text)
				}
			}},
		{"edit replaces the text",
			map[string]any{"type": "message", "subtype": "message_changed", "channel": testChannel, "channel_type": "channel",
				"ts": nextTS(), "hidden": true,
				"message":          map[string]any{"type": "message", "user": human, "text": "fixed typo", "ts": "1711111111.000100", "edited": map[string]any{"user": human, "ts": "1711111112.000000"}},
				"previous_message": map[string]any{"type": "message", "user": human, "text": "fixd typo", "ts": "1711111111.000100"}},
			func(t *testing.T, in channels.Inbound) {
				if !in.Edit || in.Text != "fixed typo" || in.ID != "1711111111.000100" || in.SenderID != human {
					t.Errorf("%+v", in)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.send(t, tc.event)
			tc.check(t, h.next(t))
		})
	}

	t.Run("unfurl-only change and joins are ignored", func(t *testing.T) {
		h.send(t, map[string]any{"type": "message", "subtype": "message_changed", "channel": testChannel, "ts": nextTS(),
			"message":          map[string]any{"type": "message", "user": human, "text": "same", "ts": "1711111113.000100", "attachments": []any{map[string]any{"title": "unfurl"}}},
			"previous_message": map[string]any{"type": "message", "user": human, "text": "same", "ts": "1711111113.000100"}})
		h.send(t, message(testChannel, human, "<@"+human+"> has joined the channel", map[string]any{"subtype": "channel_join"}))
		h.nothingBefore(t)
	})
}

func TestSendSplitsAt4000(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		n, posts int
	}{{4000, 1}, {4001, 2}} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			before := len(h.fake.Posts())
			d, err := h.sl.Send(h.ctx, channels.OutMessage{Chat: "slack:" + testChannel, Text: strings.Repeat("a", tc.n)})
			if err != nil {
				t.Fatal(err)
			}
			posts := h.fake.Posts()[before:]
			if len(posts) != tc.posts || len(d.MessageIDs) != tc.posts {
				t.Fatalf("posts = %d, ids = %d, want %d", len(posts), len(d.MessageIDs), tc.posts)
			}
			total := 0
			for _, p := range posts {
				total += len(p.Text)
			}
			if total != tc.n {
				t.Errorf("sent %d chars, want %d", total, tc.n)
			}
		})
	}
	t.Run("slack markup from the agent is escaped", func(t *testing.T) {
		before := len(h.fake.Posts())
		if _, err := h.sl.Send(h.ctx, channels.OutMessage{Chat: "slack:" + testChannel, Text: "<!channel> a < b"}); err != nil {
			t.Fatal(err)
		}
		if got := h.fake.Posts()[before].Text; got != "&lt;!channel&gt; a &lt; b" {
			t.Errorf("text = %q", got)
		}
	})
	t.Run("a failed post is reported", func(t *testing.T) {
		h.fake.FailPosts("channel_not_found")
		defer h.fake.FailPosts("")
		_, err := h.sl.Send(h.ctx, channels.OutMessage{Chat: "slack:" + testChannel, Text: "hi"})
		if err == nil || !strings.Contains(err.Error(), "channel_not_found") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestSendMediaUploadsToThread(t *testing.T) {
	h := newHarness(t, nil)
	path := filepath.Join(t.TempDir(), "chart.png")
	content := []byte("\x89PNG fake chart")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := h.sl.SendMedia(h.ctx, channels.OutMedia{Chat: "slack:" + testChannel, File: chantest.OpenFile(t, path), FileName: "chart.png", Caption: "here you go",
		ThreadID: "1712000000.000001"})
	if err != nil {
		t.Fatal(err)
	}
	ups := h.fake.Uploads()
	if len(ups) != 1 {
		t.Fatalf("uploads = %d", len(ups))
	}
	u := ups[0]
	if !bytes.Equal(u.Body, content) || u.Filename != "chart.png" || u.Channel != testChannel ||
		u.ThreadTS != "1712000000.000001" || u.InitialComment != "here you go" {
		t.Errorf("upload = %+v", u)
	}
	if len(d.MessageIDs) != 1 || d.MessageIDs[0] != u.FileID {
		t.Errorf("delivery = %+v", d)
	}
}

func TestStartFailures(t *testing.T) {
	t.Run("auth.test failure names the bot token", func(t *testing.T) {
		h := newHarness(t, nil)
		h.fake.FailAuth("invalid_auth")
		err := h.sl.Start(h.ctx)
		if err == nil {
			t.Fatal("Start succeeded")
		}
		for _, want := range []string{"channels.slack.bot_token", "SLACK_BOT_TOKEN", "invalid_auth"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if h.fake.Calls("apps.connections.open") != 0 {
			t.Error("connected despite the failed auth.test")
		}
	})
	t.Run("bad app token names the app token", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.AppToken = "xapp-wrong" })
		err := h.sl.Start(h.ctx)
		if err == nil || !strings.Contains(err.Error(), "channels.slack.app_token") || !strings.Contains(err.Error(), "SLACK_APP_TOKEN") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestNewValidatesConfig(t *testing.T) {
	env := channels.Env{}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no bot token", Config{AppToken: "xapp-1"}, "SLACK_BOT_TOKEN"},
		{"user token", Config{BotToken: "xoxp-1", AppToken: "xapp-1"}, "xoxb-"},
		{"socket without app token", Config{BotToken: "xoxb-1"}, "channels.slack.app_token"},
		{"events without secret", Config{BotToken: "xoxb-1", Mode: "events", Listen: ":0"}, "channels.slack.signing_secret"},
		{"unknown mode", Config{BotToken: "xoxb-1", Mode: "rtm"}, "channels.slack.mode"},
		{"bad api url", Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "ftp://x"}, "channels.slack.api_url"},
		{"ok", Config{BotToken: "xoxb-1", AppToken: "xapp-1"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, env)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

func TestSocketModeReconnects(t *testing.T) {
	h := newHarness(t, nil)
	h.start(t)
	ctx, cancel := context.WithTimeout(h.ctx, chantest.HangGuard)
	defer cancel()
	if err := h.fake.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.fake.DropConnection()
	if err := h.fake.WaitConnected(ctx, 2); err != nil {
		t.Fatal(err)
	}
	h.send(t, message(testChannel, human, "still there?", nil))
	if in := h.next(t); in.Text != "still there?" {
		t.Errorf("text = %q", in.Text)
	}
}

func TestEventsAPI(t *testing.T) {
	const secret = "s3cret-signing"
	h := newHarness(t, func(c *Config) {
		c.Mode, c.AppToken, c.SigningSecret, c.Listen = "events", "", secret, "127.0.0.1:0"
	})
	h.start(t)
	url := "http://" + h.sl.Addr().String() + "/slack/events"
	do := func(t *testing.T, req *http.Request) (*http.Response, string) {
		t.Helper()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	t.Run("url_verification answers the challenge", func(t *testing.T) {
		body := mustJSON(t, map[string]any{"token": "x", "challenge": "ch4llenge-123", "type": "url_verification"})
		resp, got := do(t, signedRequest(t, url, secret, body, time.Now()))
		if resp.StatusCode != http.StatusOK || !strings.Contains(got, `"challenge":"ch4llenge-123"`) {
			t.Errorf("status %d body %q", resp.StatusCode, got)
		}
	})

	event := slackfake.Callback(message(testChannel, human, "<@"+slackfake.BotUserID+"> via http", nil))
	body := mustJSON(t, event)
	bad := []struct {
		name string
		req  *http.Request
	}{
		{"wrong secret", signedRequest(t, url, "not-the-secret", body, time.Now())},
		{"stale timestamp", signedRequest(t, url, secret, body, time.Now().Add(-10*time.Minute))},
		{"unsigned", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			return r
		}()},
	}
	for _, tc := range bad {
		t.Run("bad signature: "+tc.name, func(t *testing.T) {
			if resp, _ := do(t, tc.req); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status = %d, want 401", resp.StatusCode)
			}
		})
	}
	// nothingBefore over HTTP: a signed marker must be the next delivery.
	nothingBefore := func(t *testing.T) {
		t.Helper()
		const marker = "marker: nothing before me"
		marked := mustJSON(t, slackfake.Callback(message(testChannel, human, marker, nil)))
		if resp, _ := do(t, signedRequest(t, url, secret, marked, time.Now())); resp.StatusCode != http.StatusOK {
			t.Fatalf("marker status = %d", resp.StatusCode)
		}
		if in := h.next(t); in.Text != marker {
			t.Fatalf("unexpected delivery: %+v", in)
		}
	}
	nothingBefore(t)

	t.Run("signed event is delivered once even when retried", func(t *testing.T) {
		for range 2 {
			if resp, _ := do(t, signedRequest(t, url, secret, body, time.Now())); resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d", resp.StatusCode)
			}
		}
		in := h.next(t)
		if !in.Mentioned || in.Text != "@Andy via http" {
			t.Errorf("inbound = %+v", in)
		}
		nothingBefore(t)
	})
}

func TestEditOfFileShareReusesRefs(t *testing.T) {
	h := newHarness(t, nil)
	h.start(t)
	files := imageAndPDF(h)
	orig := message(testChannel, human, "fist draft", map[string]any{"subtype": "file_share", "files": files})
	h.send(t, orig)
	first := h.next(t)
	h.send(t, map[string]any{"type": "message", "subtype": "message_changed", "channel": testChannel, "channel_type": "channel",
		"ts":               nextTS(),
		"message":          map[string]any{"type": "message", "subtype": "file_share", "user": human, "text": "first draft", "ts": orig["ts"], "files": files},
		"previous_message": map[string]any{"type": "message", "subtype": "file_share", "user": human, "text": "fist draft", "ts": orig["ts"], "files": files}})
	edit := h.next(t)
	if !edit.Edit || edit.ID != first.ID || len(edit.Refs) != len(first.Refs) {
		t.Fatalf("edit = %+v", edit)
	}
	for i := range first.Refs {
		if edit.Refs[i].ID != first.Refs[i].ID {
			t.Errorf("edit ref %d is %s, want the original %s", i, edit.Refs[i].ID, first.Refs[i].ID)
		}
	}
	wantText := strings.Replace(first.Text, "fist draft", "first draft", 1)
	if edit.Text != wantText {
		t.Errorf("edit text = %q, want %q (same refs)", edit.Text, wantText)
	}
	list, err := h.reg.List(h.ctx, mediaregistry.Chats{first.ChatID}, mediaregistry.Filter{})
	if err != nil || len(list) != 2 {
		t.Errorf("registry holds %d refs (%v), want 2", len(list), err)
	}
	stored, err := h.st.Message(h.ctx, first.ChatID, first.ID)
	if err != nil || stored.Text != wantText {
		t.Errorf("stored = %q, %v", stored.Text, err)
	}
}

// A file stored outside Slack gets a metadata-only placeholder (the bot
// token must not go there) and a deleted one a note; both follow the
// fetchable files' placeholders and precede the typed text.
func TestExternalAndDeletedFilesAreNamedWithoutRefs(t *testing.T) {
	h := newHarness(t, nil)
	h.start(t)
	files := imageAndPDF(h)[:1]
	files = append(files,
		map[string]any{"id": "F0EXT001", "name": "plan.gdoc", "mimetype": "application/vnd.google-apps.document",
			"is_external": true, "external_type": "gdrive", "url_private": "https://docs.google.com/x"},
		map[string]any{"id": "F0GONE01", "mode": "tombstone"})
	h.send(t, message(testChannel, human, "see attached", map[string]any{"subtype": "file_share", "files": files}))
	in := h.next(t)
	if len(in.Refs) != 1 || in.Refs[0].Kind != mediaregistry.Image {
		t.Fatalf("refs = %+v, want the image only", in.Refs)
	}
	want := "[Image: sunset.png, 2.4MB, image/png, ref:" + in.Refs[0].ID + "]\n" +
		"[Document: plan.gdoc, application/vnd.google-apps.document]\n" +
		"[1 file no longer available]\n" +
		"see attached"
	if in.Text != want {
		t.Errorf("text = %q, want %q", in.Text, want)
	}
}
