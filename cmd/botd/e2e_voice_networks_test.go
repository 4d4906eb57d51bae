package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/discord/discordfake"
	"github.com/botd-dev/botd/channels/matrix/matrixfake"
	"github.com/botd-dev/botd/internal/testwait"
)

const voiceNetworksConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
media:
  transcription: {provider: fake, model: whisper-test}
channels:
  discord: {enabled: true, token: "%s", api_url: "%s", gateway_url: "%s"}
  matrix: {enabled: true, homeserver: "%s", user_id: "%s", access_token: "%s"}
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: club, name: Club, chat: "discord:%s", requires_trigger: true}
  - {folder: family, name: Family, chat: "matrix:%s", requires_trigger: true}
`

// Voice messages on Discord and Matrix are transcribed like Telegram's:
// nothing on receipt; asked about, one download and one transcription,
// and the model answers from the words.
func TestVoiceMessagesOnDiscordAndMatrix(t *testing.T) {
	const room = "!family:fake.local"
	dc := discordfake.New(t)
	mx := matrixfake.New(t)
	mx.Join(room, "Family", map[string]string{"@ann:fake.local": "Ann"})
	model := newVoiceModel(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(voiceNetworksConfig,
		discordfake.Token, dc.APIURL(), dc.GatewayURL(), mx.URL(), matrixfake.UserID, matrixfake.Token,
		model.srv.URL, discordfake.Channel, room))
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard only
	defer cancel()
	if err := dc.WaitReady(ctx, 1); err != nil {
		t.Fatal(err)
	}
	start := mx.Position()
	testwait.Within(t, 60*time.Second, "matrix synced past the start", func() bool { return mx.SyncedFrom(start) })
	voice := append([]byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x13OpusHead\x01\x01"), make([]byte, 4000)...)
	transcriptions := func() int {
		model.mu.Lock()
		defer model.mu.Unlock()
		return model.transcriptions
	}
	want := "The voice note says: " + spokenWords

	t.Run("discord", func(t *testing.T) {
		_, atts := dc.Post(discordfake.Message{Raw: map[string]any{"flags": 1 << 13}, Attachments: []discordfake.Attachment{
			{Name: "voice-message.ogg", ContentType: "audio/ogg", Body: voice,
				Extra: map[string]any{"duration_secs": 4.0, "waveform": "AAAAAAAAAAAA"}}}})
		qid, _ := dc.Post(discordfake.Message{Content: "<@" + discordfake.BotUserID + "> what does the voice note say?",
			Raw: map[string]any{"mentions": []any{map[string]any{"id": discordfake.BotUserID, "username": "botd", "bot": true}}}})
		testwait.Within(t, 60*time.Second, "the Discord answer", func() bool {
			for _, s := range dc.SentMessages() {
				if s.ReplyTo == qid && strings.Contains(dc.Content(s.ID), want) {
					return true
				}
			}
			return false
		})
		if n, tr := dc.CDNHits(atts[0]), transcriptions(); n != 1 || tr != 1 {
			t.Errorf("downloads %d, transcriptions %d; want one each", n, tr)
		}
	})

	t.Run("matrix", func(t *testing.T) {
		before := transcriptions()
		// Other bytes: the same recording would reuse Discord's transcript
		// (transcripts are kept by content).
		voice := append(append([]byte(nil), voice...), "matrix"...)
		mxc := mx.AddMedia(voice, "audio/ogg")
		mx.Post(room, "@ann:fake.local", map[string]any{"msgtype": "m.audio", "body": "Voice message", "url": mxc,
			"info": map[string]any{"mimetype": "audio/ogg", "duration": 4000, "size": len(voice)}, "org.matrix.msc3245.voice": map[string]any{}})
		qid := mx.Post(room, "@ann:fake.local", map[string]any{"msgtype": "m.text", "body": "Andy: what does the voice note say?",
			"m.mentions": map[string]any{"user_ids": []string{matrixfake.UserID}}})
		testwait.Within(t, 60*time.Second, "the Matrix answer", func() bool {
			for _, s := range mx.Sends() {
				var c struct {
					Body      string `json:"body"`
					RelatesTo struct {
						InReplyTo struct {
							EventID string `json:"event_id"`
						} `json:"m.in_reply_to"`
					} `json:"m.relates_to"`
				}
				if json.Unmarshal(s.Content, &c) == nil && c.RelatesTo.InReplyTo.EventID == qid && strings.Contains(c.Body, want) {
					return true
				}
			}
			return false
		})
		if n, tr := mx.Downloads("v1"), transcriptions()-before; n != 1 || tr != 1 {
			t.Errorf("downloads %d, transcriptions %d; want one each", n, tr)
		}
	})
	host.stop(t)
}
