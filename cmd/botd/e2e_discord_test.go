package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/discord/discordfake"
	"github.com/botd-dev/botd/internal/testwait"
)

const discordConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
channels:
  discord:
    enabled: true
    token: "%s"
    api_url: "%s"
    gateway_url: "%s"
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: club, name: Club, chat: "discord:%s", requires_trigger: true}
`

// The Discord channel with the real binary: a photo posted is not
// downloaded; by the time someone asks, its signed CDN link has expired,
// so the fetch refreshes it first and downloads once; the answer is a
// reply to the question.
func TestDiscordEndToEnd(t *testing.T) {
	fake := discordfake.New(t)
	model := newRefModel(t, "dc")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(discordConfig, discordfake.Token, fake.APIURL(),
		fake.GatewayURL(), model.srv.URL, discordfake.Channel))

	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard only
	defer cancel()
	if err := fake.WaitReady(ctx, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("discord sent: %+v", fake.SentMessages())
		}
	})

	// A photo nobody asks about, then the one the question is about.
	other := pngOf(t, 32, 24)
	_, others := fake.Post(discordfake.Message{Content: "old logo", Attachments: []discordfake.Attachment{
		{Name: "old.png", ContentType: "image/png", Body: other}}})
	photo := pngOf(t, 64, 48)
	_, atts := fake.Post(discordfake.Message{Content: "our new logo", Attachments: []discordfake.Attachment{
		{Name: "logo.png", ContentType: "image/png", Body: photo, Extra: map[string]any{"width": 64, "height": 48}}}})
	fake.ExpireLinks()

	qid, _ := fake.Post(discordfake.Message{Content: "<@" + discordfake.BotUserID + "> what is in the photo?",
		Raw: map[string]any{"mentions": []any{map[string]any{"id": discordfake.BotUserID, "username": "botd", "bot": true}}}})
	answers := func() []discordfake.Sent {
		var out []discordfake.Sent
		for _, s := range fake.SentMessages() {
			if s.ReplyTo == qid {
				out = append(out, s)
			}
		}
		return out
	}
	testwait.Within(t, 60*time.Second, "a reply to the question", func() bool {
		a := answers()
		return len(a) > 0 && strings.Contains(fake.Content(a[0].ID), "Answer: I saw the image.")
	})
	if a := answers(); len(a) != 1 || a[0].Channel != discordfake.Channel {
		t.Errorf("replies %+v, want one in the channel", a)
	}
	if n, r := fake.CDNHits(atts[0]), fake.Refreshes(); n != 1 || r < 1 {
		t.Errorf("CDN downloads %d after %d link refreshes, want one download after a refresh", n, r)
	}
	if n := fake.CDNHits(others[0]); n != 0 {
		t.Errorf("the photo nobody asked about was downloaded %d times", n)
	}
	reqs := model.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last, base64.StdEncoding.EncodeToString(photo)) {
		t.Errorf("the model did not get the photo's bytes")
	}
	host.stop(t)
}

// `botd config check` asks Discord whether the token works and the
// Message Content intent is on, and names the switch when it is off.
func TestDiscordConfigCheck(t *testing.T) {
	fake := discordfake.New(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(discordConfig, discordfake.Token, fake.APIURL(),
		fake.GatewayURL(), "http://127.0.0.1:9", discordfake.Channel))
	out, code := runCLI(t, dir, "config", "check", "--config", "botd.yaml")
	if code != 0 || !strings.Contains(out, "botd.yaml: OK") {
		t.Fatalf("with the intent on: exit %d\n%s", code, out)
	}
	fake.SetMessageContentIntent(false)
	out, code = runCLI(t, dir, "config", "check", "--config", "botd.yaml")
	if code != 1 || !strings.Contains(out, "channels.discord: ") || !strings.Contains(out, "Message Content") {
		t.Fatalf("with the intent off: exit %d\n%s", code, out)
	}
	if strings.Contains(out, discordfake.Token) {
		t.Errorf("the token is in the output:\n%s", out)
	}
}
