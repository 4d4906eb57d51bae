package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm/llmfake"
)

// What the scripted model reads in the tool results it is given.
var (
	bobsMatch  = regexp.MustCompile(`<message id="(\d+)" time="[^"]+" sender="Bob">I got the tickets for Saturday`)
	ticketsRef = regexp.MustCompile(`\[Image: [^\]]*ref:(tg_[0-9A-Za-z]+)\]`)
)

// The conversation as data, end to end with the real binary and the fake
// Telegram: messages sent 10 days ago (dated as Telegram dates them) are
// outside what a run is shown, yet the assistant asked about them finds
// them with search_messages and reads around them with read_messages (a
// scripted model loading and calling both); and an MCP client over `botd mcp` finds
// the same message, reads its neighbours with the photo's placeholder and
// fetches the photo by its ref.
func TestHistoryIsSearchedEndToEnd(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	const answerPrefix = "Bob said: "
	model := llmfake.New(t, func(r llmfake.Request) llmfake.Reply {
		c := readChat(r.Body)
		if !strings.Contains(c.Users, "what did Bob say about the tickets") {
			return llmfake.Reply{Text: "Hi there."}
		}
		if c.LastRole != "tool" {
			// The history tools are loaded first (lazy tools).
			return llmfake.Reply{Tool: "load_tools", Args: `{"names":["search_messages","read_messages"]}`}
		}
		if strings.Contains(c.LastText, "Loaded search_messages, read_messages") {
			return llmfake.Reply{Tool: "search_messages", Args: `{"query":"tickets"}`}
		}
		if m := bobsMatch.FindStringSubmatch(c.LastText); m != nil && strings.Contains(c.LastText, "matching") {
			return llmfake.Reply{Tool: "read_messages", Args: fmt.Sprintf(`{"around":%q,"limit":5}`, m[1])}
		}
		if ref := ticketsRef.FindStringSubmatch(c.LastText); ref != nil && strings.Contains(c.LastText, "in order") {
			return llmfake.Reply{Text: answerPrefix + "he got the tickets for Saturday, photo " + ref[1]}
		}
		return llmfake.Reply{Text: "The tool results lacked Bob's message: " + c.LastText}
	})
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(agentConfig, telegramtest.Token, tg.URL(), "openai", model.URL+"/v1", "gpt-4.1"))

	fam := telegramtest.Group(-100, "Family")
	alice, bob, carol := telegramtest.Person(41, "Alice"), telegramtest.Person(43, "Bob"), telegramtest.Person(44, "Carol")
	old := time.Now().Add(-10 * 24 * time.Hour)
	at := func(d time.Duration) int { return int(old.Add(d).Unix()) }
	photo := noisyJPEG(t, 120, 90)
	tg.AddFile(telegramtest.File{ID: "tickets-photo", Data: photo})
	tg.Enqueue(
		models.Update{Message: &models.Message{ID: 10, Chat: fam, From: &alice, Date: at(0), Text: "Who has the tickets for the concert?"}},
		models.Update{Message: &models.Message{ID: 11, Chat: fam, From: &bob, Date: at(time.Minute), Text: "I got the tickets for Saturday, row 12"}},
		models.Update{Message: &models.Message{ID: 12, Chat: fam, From: &bob, Date: at(2 * time.Minute), Caption: "here they are",
			Photo: []models.PhotoSize{{FileID: "tickets-photo", FileUniqueID: "tickets-photo-u", Width: 120, Height: 90, FileSize: len(photo)}}}},
		models.Update{Message: &models.Message{ID: 13, Chat: fam, From: &carol, Date: at(3 * time.Minute), Text: "Great, thanks Bob"}},
		// Answered now: the run after it is shown what came since.
		models.Update{Message: &models.Message{ID: 14, Chat: fam, From: &alice, Date: int(time.Now().Unix()), Text: "@Andy hello"}},
	)
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	defer host.stop(t)
	host.waitLog(t, "botd running")
	sentWith := func(s string) bool {
		for _, m := range tg.Sent() {
			if strings.Contains(m.Text, s) {
				return true
			}
		}
		return false
	}
	testwait.Within(t, 60*time.Second, "the hello is answered", func() bool { return sentWith("Hi there.") })

	tg.Enqueue(models.Update{Message: &models.Message{ID: 15, Chat: fam, From: &alice, Date: int(time.Now().Unix()),
		Text: "@Andy what did Bob say about the tickets last week?"}})
	testwait.Within(t, 60*time.Second, "the question is answered", func() bool { return sentWith(answerPrefix) })

	var asked []llmfake.Request
	for _, r := range model.Requests() {
		if strings.Contains(readChat(r.Body).Users, "what did Bob say about the tickets") {
			asked = append(asked, r)
		}
	}
	if len(asked) != 4 {
		t.Fatalf("the question took %d model requests, want 4 (load, search, read, answer)", len(asked))
	}
	if first := readChat(asked[0].Body); strings.Contains(first.Users, "I got the tickets") || !strings.Contains(first.System, "search_messages") {
		t.Fatalf("the question's first request: Bob's old message is in the context (%v), or the prompt does not say history is searchable (%v)",
			strings.Contains(first.Users, "I got the tickets"), !strings.Contains(first.System, "search_messages"))
	}
	searched := readChat(asked[2].Body).LastText
	if !bobsMatch.MatchString(searched) || !strings.Contains(searched, old.Add(time.Minute).UTC().Format("2006-01-02")) {
		t.Fatalf("search_messages did not give Bob's message with its date:\n%s", searched)
	}
	read := readChat(asked[3].Body).LastText
	iAlice, iBob, iPhoto, iCarol := strings.Index(read, "Who has the tickets"), strings.Index(read, "I got the tickets"),
		strings.Index(read, "[Image:"), strings.Index(read, "Great, thanks Bob")
	if iAlice < 0 || iBob < iAlice || iPhoto < iBob || iCarol < iPhoto {
		t.Fatalf("read_messages around Bob's message is not Alice, Bob, the photo, Carol in order:\n%s", read)
	}
	var answer string
	for _, m := range tg.Sent() {
		if strings.Contains(m.Text, answerPrefix) {
			answer = m.Text
		}
	}
	ref := ticketsRef.FindStringSubmatch(read)[1]
	if !strings.Contains(answer, ref) {
		t.Fatalf("the answer %q does not carry the photo's ref %s", answer, ref)
	}

	// The same over MCP, as Claude Desktop connected to the group sees it.
	c := mcpStdio(t, dir, "botd.yaml", "family")
	text := resultText(callTool(t, c, "search_messages", map[string]any{"query": "tickets saturday"}))
	m := bobsMatch.FindStringSubmatch(text)
	if m == nil || m[1] != "11" {
		t.Fatalf("search_messages over MCP:\n%s", text)
	}
	text = resultText(callTool(t, c, "read_messages", map[string]any{"around": m[1], "limit": 3}))
	if !strings.Contains(text, "Who has the tickets") || !strings.Contains(text, "ref:"+ref) || strings.Contains(text, "Great, thanks Bob") {
		t.Fatalf("read_messages around 11, limit 3, over MCP:\n%s", text)
	}
	res := callTool(t, c, "fetch_media", map[string]any{"mediaRef": ref})
	var gotImage bool
	for _, ct := range res.Content {
		if ic, ok := mcpgo.AsImageContent(ct); ok && strings.HasPrefix(ic.MIMEType, "image/") && ic.Data != "" {
			gotImage = true
		}
	}
	if res.IsError || !gotImage {
		t.Fatalf("fetch_media of the ref read_messages showed: error %v, image %v: %s", res.IsError, gotImage, resultText(res))
	}

	// And through the official TypeScript SDK's client, as Claude Desktop.
	if !haveSDK(t) {
		return
	}
	got := sdkClient(t, []string{"BOTD_CONFIG="}, []string{"mcp", "--group", "family", "--config", filepath.Join(dir, "botd.yaml")},
		[]sdkCall{
			{Tool: "search_messages", Args: map[string]any{"query": "tickets"}},
			{Tool: "read_messages", Args: map[string]any{"around": "11", "limit": 3}},
			{Tool: "fetch_media", Args: map[string]any{"mediaRef": ref}},
		})
	search, around, fetched := got[0], got[1], got[2]
	if m := bobsMatch.FindStringSubmatch(search.text()); search.IsError || m == nil || m[1] != "11" ||
		!strings.Contains(search.text(), old.Add(time.Minute).UTC().Format("2006-01-02")) {
		t.Fatalf("search_messages through the SDK: Bob's message with its time and sender not found: %+v", search)
	}
	if txt := around.text(); around.IsError || !strings.Contains(txt, "Who has the tickets") || !strings.Contains(txt, "ref:"+ref) {
		t.Fatalf("read_messages around Bob's message through the SDK lacks its neighbours or the photo's placeholder:\n%s", txt)
	}
	var sdkImage bool
	for _, c := range fetched.Content {
		sdkImage = sdkImage || (c.Type == "image" && strings.HasPrefix(c.MimeType, "image/") && c.Data != "")
	}
	if fetched.IsError || !sdkImage {
		t.Fatalf("fetch_media of the ref through the SDK: %+v", fetched.text())
	}
}
