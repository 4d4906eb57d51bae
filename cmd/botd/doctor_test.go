package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/llm/llmfake"
)

const doctorConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
channels:
  telegram: {enabled: true, token: "%s", api_url: "%s"}
  web: {enabled: true, listen: "%s"}
llm:
  providers:
    fake: {type: openai, api_key: "%s", base_url: "%s"}
  model: {provider: fake, name: fake-model}
media:
  describe: {provider: fake, model: vision-model}
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
`

// goodModelKey is the one key keyedModel accepts.
const goodModelKey = "sk-doctor-good-key-not-real"

// keyedModel is the fake model server answering on the OpenAI wire with
// a key check: any key but goodModelKey gets OpenAI's 401.
func keyedModel(t *testing.T) *llmfake.Server {
	return llmfake.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+goodModelKey {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		llmfake.Write(w, llmfake.OpenAI, llmfake.Reply{Text: "ok", OutputTokens: 1})
	}))
}

// standIns is a folder for PATH holding a script for each of names, and
// nothing else: the programs doctor looks for, present or not at will.
func standIns(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// doctorLineOf finds the output line that starts with prefix.
func doctorLineOf(out, prefix string) (string, bool) {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l, true
		}
	}
	return "", false
}

// `botd doctor` on a good config and on broken ones says the right line
// for each check, exits 1 only on a FAIL, and prints no secret.
func TestDoctor(t *testing.T) {
	tg := telegramtest.New(t)
	model := keyedModel(t)
	all := standIns(t, "ffmpeg", "ffprobe", "pdftoppm")
	noFFmpeg := standIns(t, "ffprobe", "pdftoppm")
	// A port something else holds: the web address of a broken config.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// An address nothing answers on: an unreachable Bot API.
	unreachable := "http://" + freeAddr(t)

	type want struct {
		prefix, has string
	}
	cases := []struct {
		name      string
		tgToken   string
		tgURL     string
		web       string
		key       string
		path      string
		online    bool
		wantCode  int
		want      []want
		wantCalls int // requests the model got
	}{
		{
			name: "good config", tgToken: telegramtest.Token, tgURL: tg.URL(), web: "127.0.0.1:0", key: goodModelKey, path: all,
			want: []want{
				{"OK   config: ", "botd.yaml"},
				{"OK   telegram: ", "bot @" + telegramtest.BotUsername + " (id " + strconv.FormatInt(telegramtest.BotID, 10) + ")"},
				{"INFO model fake/fake-model: ", "--online"},
				{"INFO model fake/vision-model (media.describe): ", "--online"},
				{"OK   ffmpeg: ", filepath.Join(all, "ffmpeg")},
				{"OK   ffprobe: ", ""},
				{"OK   pdftoppm: ", ""},
				{"OK   disk: ", "free on the disk of data_dir"},
				{"INFO data_dir: ", "does not exist yet"},
				{"INFO database: ", "not created yet"},
				{"OK   channels.web.listen: ", "is free"},
			},
		},
		{
			name: "good config, online", tgToken: telegramtest.Token, tgURL: tg.URL(), web: "127.0.0.1:0", key: goodModelKey, path: all,
			online: true, wantCalls: 2,
			want: []want{
				{"OK   telegram: ", "@" + telegramtest.BotUsername},
				{"OK   model fake/fake-model: ", "answered a one-token request"},
				{"OK   model fake/vision-model (media.describe): ", "answered a one-token request"},
			},
		},
		{
			name: "broken: no ffmpeg, unreachable Bot API, bad key, web address taken", tgToken: telegramtest.Token, tgURL: unreachable,
			web: held.Addr().String(), key: "sk-doctor-bad-key-not-real", path: noFFmpeg, online: true, wantCode: 1, wantCalls: 2,
			want: []want{
				{"OK   config: ", ""},
				{"FAIL telegram: ", "getMe at " + unreachable},
				{"FAIL telegram: ", "check the network from this machine and the channel's API address"},
				{"FAIL model fake/fake-model: ", "the key was refused"},
				{"FAIL model fake/vision-model (media.describe): ", "set llm.providers.fake.api_key"},
				{"FAIL ffmpeg: ", "not on PATH — install ffmpeg (apt install ffmpeg) to read videos and voice notes"},
				{"OK   ffprobe: ", ""},
				{"FAIL channels.web.listen: ", held.Addr().String() + " is in use by another program"},
			},
		},
		{
			name: "rejected bot token", tgToken: "654321:REJECTED-token-not-real", tgURL: tg.URL(), web: "127.0.0.1:0", key: goodModelKey,
			path: all, wantCode: 1,
			want: []want{
				{"FAIL telegram: ", "the bot token was rejected"},
				{"INFO model fake/fake-model: ", ""},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(doctorConfig, tc.tgToken, tc.tgURL, tc.web, tc.key, model.URL))
			before := len(model.Requests())
			args := []string{"doctor", "--config", "botd.yaml"}
			if tc.online {
				args = append(args, "--online")
			}
			out, code := runCLIPath(t, dir, tc.path, args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d", code, tc.wantCode)
			}
			for _, w := range tc.want {
				l, ok := doctorLineOf(out, w.prefix)
				if !ok || !strings.Contains(l, w.has) {
					t.Errorf("no line %q…%q", w.prefix, w.has)
				}
			}
			if fails := strings.Count("\n"+out, "\nFAIL "); (fails > 0) != (tc.wantCode != 0) {
				t.Errorf("%d FAIL lines with exit %d", fails, code)
			}
			for _, secret := range []string{tc.tgToken, tc.key} {
				if strings.Contains(out, secret) {
					t.Errorf("the output holds the secret %q", secret)
				}
			}
			reqs := model.Requests()[before:]
			if len(reqs) != tc.wantCalls {
				t.Fatalf("the model got %d requests, want %d", len(reqs), tc.wantCalls)
			}
			for _, r := range reqs {
				if !strings.Contains(string(r.Body), `"max_tokens":1,`) && !strings.Contains(string(r.Body), `"max_completion_tokens":1,`) {
					t.Errorf("not a one-token request: %s", r.Body)
				}
			}
			if t.Failed() {
				t.Logf("botd doctor:\n%s", out)
			}
		})
	}
}

// With botd running on the data folder, doctor names it, its lease, and
// the web address it holds, and none of that is a failure.
func TestDoctorBesideARunningBotd(t *testing.T) {
	tg := telegramtest.New(t)
	model := keyedModel(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(doctorConfig, telegramtest.Token, tg.URL(), addr, goodModelKey, model.URL))
	p := startBotd(t, dir, "run", "--config", "botd.yaml")
	p.waitLog(t, "botd running")

	out, code := runCLIPath(t, dir, standIns(t, "ffmpeg", "ffprobe", "pdftoppm"), "doctor", "--config", "botd.yaml")
	if code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	pid := fmt.Sprintf("(pid %d, running since ", p.cmd.Process.Pid)
	for _, w := range []struct{ prefix, has string }{
		{"OK   data_dir: ", "botd " + pid},
		{"OK   database: ", "sqlite opens"},
		{"OK   lease: ", "is active since"},
		{"OK   channels.web.listen: ", addr + " is in use, presumably by the botd " + pid},
		{"OK   telegram: ", "@" + telegramtest.BotUsername},
	} {
		if l, ok := doctorLineOf(out, w.prefix); !ok || !strings.Contains(l, w.has) {
			t.Errorf("no line %q…%q", w.prefix, w.has)
		}
	}
	if t.Failed() {
		t.Logf("botd doctor:\n%s", out)
	}
	p.stop(t)
}

// A config with problems gets a FAIL line for each, and no other check
// runs on it; a bad flag is a usage error.
func TestDoctorBadConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bad.yaml"), "media: {ref_ttl: soon}\nchannels: {telegram: {enabled: true, tokne: x}}\n")
	out, code := runCLI(t, dir, "doctor", "--config", "bad.yaml")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"FAIL config: media.ref_ttl: invalid duration",
		"FAIL config: channels.telegram.tokne: unknown key (did you mean token?)",
		"FAIL config: bad.yaml has 3 problem(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no line %q", want)
		}
	}
	if strings.Contains(out, "ffmpeg") || strings.Contains(out, "telegram: bot") {
		t.Errorf("checks ran on an invalid config")
	}
	if t.Failed() {
		t.Logf("botd doctor:\n%s", out)
	}
	if _, code := runCLI(t, dir, "doctor", "--config", "bad.yaml", "--timeout", "0s"); code != 2 {
		t.Errorf("--timeout 0s: exit %d, want 2", code)
	}
}
