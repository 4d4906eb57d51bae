package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/crypto/attachment"

	"github.com/botd-dev/botd/channels/matrix/matrixfake"
	"github.com/botd-dev/botd/format"
	"github.com/botd-dev/botd/internal/testwait"
)

const matrixConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
channels:
  matrix:
    enabled: true
    homeserver: "%s"
    user_id: "%s"
    access_token: "%s"
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: family, name: Family, chat: "matrix:%s", requires_trigger: true}
`

// newRefModel asks for the newest placeholder whose ref starts with
// prefix (mx, dc) with fetch_media and, once the tool result is there,
// answers with what it got: "saw the image" when the result carries
// one, else that the file could not be read.
func newRefModel(t *testing.T, prefix string) *fakeModel {
	refRe := regexp.MustCompile(`ref:(` + prefix + `_[0-9A-Za-z]+)\]`)
	m := &fakeModel{t: t, wire: "openai"}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.requests = append(m.requests, string(body))
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.Contains(string(body), `"tool_call_id"`) {
			if strings.Contains(string(body), "image_url") {
				m.text(w, "Answer: I saw the image.")
			} else {
				m.text(w, "Answer: the file could not be read.")
			}
			return
		}
		refs := refRe.FindAllStringSubmatch(newText(body), -1)
		if len(refs) == 0 {
			m.text(w, "Answer: nothing to look at.")
			return
		}
		m.toolCall(w, "fetch_media", fmt.Sprintf(`{"mediaRef":%q}`, refs[len(refs)-1][1]))
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// The Matrix channel with the real binary: a photo posted is not
// downloaded; asked about, it is downloaded once through the
// authenticated media endpoint and the answer arrives as a formatted
// reply; an encrypted photo is decrypted, and a tampered one refused.
func TestMatrixEndToEnd(t *testing.T) {
	const room = "!family:fake.local"
	const ann = "@ann:fake.local"
	fake := matrixfake.New(t)
	fake.Join(room, "Family", map[string]string{ann: "Ann"})
	model := newRefModel(t, "mx")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(matrixConfig, fake.URL(), matrixfake.UserID,
		matrixfake.Token, model.srv.URL, room))

	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	// The first sync only learns where the room stands; what is posted
	// after it is new.
	start := fake.Position()
	testwait.Within(t, 60*time.Second, "botd synced past the start", func() bool { return fake.SyncedFrom(start) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("matrix sends: %+v", fake.Sends())
		}
	})

	replies := func(to string) []matrixfake.Send {
		var out []matrixfake.Send
		for _, s := range fake.Sends() {
			var c struct {
				RelatesTo struct {
					InReplyTo struct {
						EventID string `json:"event_id"`
					} `json:"m.in_reply_to"`
				} `json:"m.relates_to"`
			}
			if s.Type == "m.room.message" && !s.Repeat && json.Unmarshal(s.Content, &c) == nil && c.RelatesTo.InReplyTo.EventID == to {
				out = append(out, s)
			}
		}
		return out
	}
	ask := func(question string) matrixfake.Send {
		t.Helper()
		id := fake.Post(room, ann, map[string]any{"msgtype": "m.text", "body": "Andy: " + question,
			"m.mentions": map[string]any{"user_ids": []string{matrixfake.UserID}}})
		testwait.Within(t, 60*time.Second, "a reply to "+question, func() bool { return len(replies(id)) > 0 })
		got := replies(id)
		if len(got) != 1 {
			t.Fatalf("%d replies to %q, want 1", len(got), question)
		}
		return got[0]
	}

	// A photo posted: nothing is downloaded.
	photo := pngOf(t, 64, 48)
	mxc := fake.AddMedia(photo, "image/png")
	fake.Post(room, ann, map[string]any{"msgtype": "m.image", "body": "garden.png", "url": mxc,
		"info": map[string]any{"mimetype": "image/png", "size": len(photo), "w": 64, "h": 48}})
	fake.Post(room, ann, map[string]any{"msgtype": "m.text", "body": "lovely weather"})
	posted := fake.Position()
	testwait.Within(t, 60*time.Second, "botd synced the photo", func() bool { return fake.SyncedFrom(posted) })
	if n := fake.Downloads("v1") + fake.Downloads("v3"); n != 0 {
		t.Fatalf("%d downloads before anyone asked", n)
	}

	reply := ask("what is in the photo?")
	var content struct {
		Body          string `json:"body"`
		Format        string `json:"format"`
		FormattedBody string `json:"formatted_body"`
	}
	if err := json.Unmarshal(reply.Content, &content); err != nil {
		t.Fatal(err)
	}
	if content.Body != "Answer: I saw the image." || content.Format != "org.matrix.custom.html" ||
		!strings.Contains(content.FormattedBody, "Answer: I saw the image.") {
		t.Errorf("reply %+v", content)
	}
	if v1, v3 := fake.Downloads("v1"), fake.Downloads("v3"); v1 != 1 || v3 != 0 {
		t.Errorf("downloads: authenticated %d, legacy %d; want one authenticated", v1, v3)
	}
	reqs := model.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last, base64.StdEncoding.EncodeToString(photo)) {
		t.Errorf("the model did not get the photo's bytes")
	}

	// An encrypted photo is decrypted on its way into the cache.
	secret := pngOf(t, 40, 30)
	ef := attachment.NewEncryptedFile()
	cipher := bytes.Clone(secret)
	ef.EncryptInPlace(cipher)
	emxc := fake.AddMedia(cipher, "application/octet-stream")
	file := map[string]any{"url": emxc, "key": ef.Key, "iv": ef.InitVector, "hashes": map[string]any{"sha256": ef.Hashes.SHA256}, "v": ef.Version}
	fake.Post(room, ann, map[string]any{"msgtype": "m.image", "body": "secret.png", "file": file,
		"info": map[string]any{"mimetype": "image/png", "size": len(secret)}})
	before := len(model.Requests())
	ask("and this one?")
	reqs = model.Requests()[before:]
	if last := reqs[len(reqs)-1]; !strings.Contains(last, base64.StdEncoding.EncodeToString(secret)) {
		t.Errorf("the model did not get the decrypted photo")
	}

	// A tampered one is refused: the model hears the file could not be
	// read, and gets no image.
	other := pngOf(t, 30, 20)
	ef2 := attachment.NewEncryptedFile()
	cipher2 := bytes.Clone(other)
	ef2.EncryptInPlace(cipher2)
	tmxc := fake.AddMedia(cipher2, "application/octet-stream")
	tampered := bytes.Clone(cipher2)
	tampered[len(tampered)/2] ^= 1
	fake.ReplaceMedia(tmxc, tampered)
	file2 := map[string]any{"url": tmxc, "key": ef2.Key, "iv": ef2.InitVector, "hashes": map[string]any{"sha256": ef2.Hashes.SHA256}, "v": ef2.Version}
	fake.Post(room, ann, map[string]any{"msgtype": "m.image", "body": "tampered.png", "file": file2,
		"info": map[string]any{"mimetype": "image/png", "size": len(other)}})
	reply = ask("and the last one?")
	json.Unmarshal(reply.Content, &content)
	if content.Body != "Answer: the file could not be read." {
		t.Errorf("a tampered attachment was answered %q", content.Body)
	}
	host.stop(t)
}

// A Matrix answer is seen growing while the model writes it: the reply
// starts with the first words and is replaced by m.replace edits, ending
// as the HTML of the whole answer, one message.
func TestMatrixLiveAnswerEndToEnd(t *testing.T) {
	const room = "!family:fake.local"
	const ann = "@ann:fake.local"
	fake := matrixfake.New(t)
	fake.Join(room, "Family", map[string]string{ann: "Ann"})
	model := newSteppedModel(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(matrixConfig, fake.URL(), matrixfake.UserID,
		matrixfake.Token, model.srv.URL, room))
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	start := fake.Position()
	testwait.Within(t, 60*time.Second, "botd synced past the start", func() bool { return fake.SyncedFrom(start) })

	q := fake.Post(room, ann, map[string]any{"msgtype": "m.text", "body": "Andy: how does the rota work?",
		"m.mentions": map[string]any{"user_ids": []string{matrixfake.UserID}}})
	type content struct {
		Body          string          `json:"body"`
		FormattedBody string          `json:"formatted_body"`
		NewContent    json.RawMessage `json:"m.new_content"`
		RelatesTo     struct {
			RelType   string `json:"rel_type"`
			EventID   string `json:"event_id"`
			InReplyTo struct {
				EventID string `json:"event_id"`
			} `json:"m.in_reply_to"`
		} `json:"m.relates_to"`
	}
	// shown is what a client shows of the reply to q: the reply, or its
	// newest edit; edits counts those.
	var answerID string
	shown := func() (html string, edits, replies int) {
		for _, s := range fake.Sends() {
			var c content
			if s.Repeat || s.Type != "m.room.message" || json.Unmarshal(s.Content, &c) != nil {
				continue
			}
			switch {
			case c.RelatesTo.InReplyTo.EventID == q:
				answerID, html = s.EventID, c.FormattedBody
				replies++
			case c.RelatesTo.RelType == "m.replace" && c.RelatesTo.EventID == answerID && answerID != "":
				var nc content
				json.Unmarshal(c.NewContent, &nc)
				html = nc.FormattedBody
				edits++
			}
		}
		return html, edits, replies
	}
	model.grow(t, "the Matrix reply", func() string { h, _, _ := shown(); return h })
	want := format.Render(liveAnswer(), format.Web, 8000)
	testwait.Within(t, 60*time.Second, "the reply to end as the whole answer", func() bool {
		h, _, _ := shown()
		return len(want) == 1 && h == want[0]
	})
	_, edits, replies := shown()
	if replies != 1 || edits < len(liveChunks)-1 {
		t.Fatalf("%d replies and %d edits; want 1 reply grown by at least %d edits", replies, edits, len(liveChunks)-1)
	}
	t.Logf("the Matrix reply grew by %d edits", edits)
}
