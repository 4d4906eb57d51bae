package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm/llmfake"
)

// offeredTools reads a chat request's tools as its wire lists them: the
// ones given with their schemas, and the ones sent deferred (Anthropic's
// defer_loading).
func offeredTools(wire llmfake.Wire, body []byte) (given, deferred []string) {
	var req struct {
		Tools []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			Defer    bool   `json:"defer_loading"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
			Decls []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil, nil
	}
	for _, t := range req.Tools {
		switch wire {
		case llmfake.OpenAI:
			given = append(given, t.Function.Name)
		case llmfake.Gemini:
			for _, d := range t.Decls {
				given = append(given, d.Name)
			}
		case llmfake.Anthropic:
			if t.Defer {
				deferred = append(deferred, t.Name)
			} else {
				given = append(given, t.Name)
			}
		}
	}
	return given, deferred
}

// Lazy tools end to end, with the real binary, the fake Telegram and a
// scripted model on each wire: a plain question's first request offers
// the core tools and load_tools (whose description indexes the rest), not
// remember's schema; a model calling remember before loading it gets a
// tool error saying what to do (the run goes on); it loads remember,
// finds its schema in the next request, calls it, and the note is in the
// group's memory. On a Claude model with native tool search the deferred
// tools go to Anthropic deferred instead, and a tool its search found is
// callable in the same turn, with the request's tools unchanged between
// turns (the cached prefix).
func TestLazyToolsEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wire   llmfake.Wire
		model  string
		native bool
	}{
		{"openai", llmfake.OpenAI, "gpt-4.1", false},
		{"gemini", llmfake.Gemini, "gemini-2.5-flash", false},
		{"anthropic", llmfake.Anthropic, "claude-opus-4-1", false},
		{"anthropic-tool-search", llmfake.Anthropic, "claude-sonnet-4-5", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tg := telegramtest.New(t)
			const question = "@Andy please remember that Alice is vegetarian"
			const note = "Alice is vegetarian"
			var mu sync.Mutex
			step := 0
			model := llmfake.New(t, func(r llmfake.Request) llmfake.Reply {
				if !strings.Contains(string(r.Body), "remember that Alice") {
					return llmfake.Reply{Text: "Hi."}
				}
				mu.Lock()
				defer mu.Unlock()
				step++
				given, _ := offeredTools(tc.wire, r.Body)
				remember := `{"note":"` + note + `"}`
				switch {
				case tc.native && step == 1:
					return llmfake.Reply{Found: []string{"remember"}, Tool: "remember", Args: remember}
				case tc.native:
					return llmfake.Reply{Text: "Noted."}
				case step == 1:
					return llmfake.Reply{Tool: "remember", Args: remember} // not given yet
				case step == 2 && strings.Contains(string(r.Body), "is not loaded yet"):
					return llmfake.Reply{Tool: "load_tools", Args: `{"names":["remember"]}`}
				case step == 3 && slices.Contains(given, "remember"):
					return llmfake.Reply{Tool: "remember", Args: remember}
				case step == 4:
					return llmfake.Reply{Text: "Noted."}
				}
				return llmfake.Reply{Text: fmt.Sprintf("unexpected request at step %d: tools %v", step, given)}
			})
			base := model.URL + "/v1"
			if tc.wire != llmfake.OpenAI {
				base = model.URL
			}
			writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(agentConfig, telegramtest.Token, tg.URL(), string(tc.wire), base, tc.model))
			host := startBotd(t, dir, "run", "--config", "botd.yaml")
			defer host.stop(t)
			host.waitLog(t, "botd running")

			alice := telegramtest.Person(41, "Alice")
			tg.Enqueue(models.Update{Message: &models.Message{ID: 10, Chat: telegramtest.Group(-100, "Family"), From: &alice,
				Date: int(time.Now().Unix()), Text: question}})
			var answer string
			testwait.Within(t, 60*time.Second, "the question is answered", func() bool {
				for _, m := range tg.Sent() {
					if m.Text != "" {
						answer = m.Text
						return true
					}
				}
				return false
			})
			if answer != "Noted." {
				t.Fatalf("the run ended with %q, want the scripted model's \"Noted.\"", answer)
			}
			mem, err := os.ReadFile(filepath.Join(dir, "groups", "family", "MEMORY.md"))
			if err != nil || !strings.Contains(string(mem), note) {
				t.Fatalf("the group's memory after the run (%v):\n%s", err, mem)
			}

			var asked [][]byte
			for _, r := range model.Requests() {
				if llmfake.WireOf(r.Path) == tc.wire && strings.Contains(string(r.Body), "remember that Alice") {
					asked = append(asked, r.Body)
				}
			}
			given, deferred := offeredTools(tc.wire, asked[0])
			if !slices.Contains(given, "fetch_media") || slices.Contains(given, "remember") {
				t.Fatalf("the first request gives %v: want fetch_media and not remember", given)
			}
			if tc.native {
				if len(asked) != 2 {
					t.Fatalf("%d model requests, want 2 (search and call, answer)", len(asked))
				}
				if slices.Contains(given, "load_tools") || !slices.Contains(deferred, "remember") {
					t.Fatalf("native tool search: given %v, deferred %v; want remember deferred and no load_tools", given, deferred)
				}
				g2, d2 := offeredTools(tc.wire, asked[1])
				if !slices.Equal(given, g2) || !slices.Equal(deferred, d2) {
					t.Fatalf("the tools changed between turns (the cached prefix breaks):\n%v %v\n%v %v", given, deferred, g2, d2)
				}
				if !strings.Contains(string(asked[1]), `"server_tool_use"`) {
					t.Fatal("the second request does not replay the tool search the model made")
				}
				return
			}
			if len(asked) != 4 {
				t.Fatalf("%d model requests, want 4 (refused call, load, call, answer)", len(asked))
			}
			if !slices.Contains(given, "load_tools") || !strings.Contains(string(asked[0]), "- remember: ") {
				t.Fatalf("the first request gives %v, without load_tools or its index line for remember", given)
			}
			if len(deferred) > 0 {
				t.Fatalf("the generic path sent deferred tools %v", deferred)
			}
			g3, _ := offeredTools(tc.wire, asked[2])
			if !slices.Equal(g3[:len(given)], given) || g3[len(g3)-1] != "remember" {
				t.Fatalf("after load_tools the tools are %v: want the first turn's %v with remember appended", g3, given)
			}
		})
	}
}

// A plain question's first model request, as each wire sends it, with
// lazy tools and with every schema (agent.lazy_tools: false): estimated
// as the bill does, a token per 4 bytes of the request body. Lazy must
// cost at most half of eager on every wire; `go test -v` prints the
// figures (docs/performance.md).
func TestPlainQuestionFirstRequest(t *testing.T) {
	type leg struct {
		name  string
		wire  llmfake.Wire
		model string
	}
	legs := []leg{
		{"openai", llmfake.OpenAI, "gpt-4.1"},
		{"gemini", llmfake.Gemini, "gemini-2.5-flash"},
		{"anthropic", llmfake.Anthropic, "claude-opus-4-1"},
		{"anthropic-tool-search", llmfake.Anthropic, "claude-sonnet-4-5"},
	}
	first := func(t *testing.T, l leg, lazy bool) int {
		t.Helper()
		dir := t.TempDir()
		tg := telegramtest.New(t)
		model := llmfake.New(t, func(llmfake.Request) llmfake.Reply { return llmfake.Reply{Text: "It is 14:05 in Berlin."} })
		base := model.URL + "/v1"
		if l.wire != llmfake.OpenAI {
			base = model.URL
		}
		cfg := fmt.Sprintf(agentConfig, telegramtest.Token, tg.URL(), string(l.wire), base, l.model)
		if !lazy {
			cfg += "agent: {lazy_tools: false}\n"
		}
		writeFile(t, filepath.Join(dir, "botd.yaml"), cfg)
		host := startBotd(t, dir, "run", "--config", "botd.yaml")
		defer host.stop(t)
		host.waitLog(t, "botd running")
		alice := telegramtest.Person(41, "Alice")
		tg.Enqueue(models.Update{Message: &models.Message{ID: 10, Chat: telegramtest.Group(-100, "Family"), From: &alice,
			Date: int(time.Now().Unix()), Text: "@Andy what time is it in Berlin?"}})
		testwait.Within(t, 60*time.Second, "the question is answered", func() bool {
			return slices.ContainsFunc(tg.Sent(), func(m telegramtest.Sent) bool { return strings.Contains(m.Text, "It is 14:05 in Berlin.") })
		})
		for _, r := range model.Requests() {
			if llmfake.WireOf(r.Path) == l.wire {
				return (len(billedBody(t, r.Body)) + 3) / 4
			}
		}
		t.Fatal("no chat request reached the model")
		return 0
	}
	for _, l := range legs {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			lazy, eager := first(t, l, true), first(t, l, false)
			t.Logf("%s: a plain question's first request ~%d tokens lazy, ~%d eager (%d %%)", l.name, lazy, eager, 100*lazy/eager)
			if 2*lazy > eager {
				t.Fatalf("lazy tools: ~%d tokens, more than half of eager ~%d", lazy, eager)
			}
		})
	}
}

// billedBody is a request body without the tools sent deferred
// (Anthropic's defer_loading), which the model is not shown until its
// search finds them and which are not billed as input.
func billedBody(t *testing.T, body []byte) []byte {
	t.Helper()
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	var ts []map[string]any
	if json.Unmarshal(req["tools"], &ts) != nil {
		return body
	}
	shown := ts[:0]
	for _, tl := range ts {
		if d, _ := tl["defer_loading"].(bool); !d {
			shown = append(shown, tl)
		}
	}
	req["tools"], _ = json.Marshal(shown)
	out, _ := json.Marshal(req)
	return out
}
