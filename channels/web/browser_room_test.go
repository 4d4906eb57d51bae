package web

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/store"
)

// The room reads like a chat app, in a real browser at 1280 and 375 px,
// light and dark: a markdown table with borders and a header row, code
// coloured by language, the assistant's tool use as chips that open
// their details, a day separator, a header without internal words, an
// empty room that says how to begin; and a guest who tries the host's
// name is refused and keeps the one they chose. The dashboard lists the
// networks that are off and its tables fit 375 px as cards.
func TestBrowserRoomReadsLikeAChat(t *testing.T) {
	ctx := startBrowser(t)
	h := newHarness(t, func(_ *Config, o *Options) {
		o.Networks = map[string]bool{"web": true} // telegram (registered by dashboard_test.go) is off
	})
	bg := context.Background()

	// The host shares a photo as "Mum"; the agent's sink stores it (done
	// here by hand: the harness's sink is a recorder).
	admin := h.admin()
	if resp, body := h.post(admin, "main", h.roomCSRF(admin, "main"), "Mum", "the beach today",
		upload{"beach.png", "image/png", pngBytes(t, 40, 30)}); resp.StatusCode != 200 {
		t.Fatalf("post: %d %s", resp.StatusCode, body)
	}
	in := h.sink.Next(t)
	h.st.UpsertChat(bg, store.Chat{ID: in.ChatID, Name: "Main"})
	seq, err := h.st.PutMessage(bg, store.Message{ChatID: in.ChatID, ID: in.ID, SenderID: in.SenderID, SenderName: in.SenderName,
		Text: in.Text, Time: in.Time})
	if err != nil {
		t.Fatal(err)
	}

	// A run that looked at the photo and read a page (loading fetch_url
	// first, which is no chip: botd's own bookkeeping), whose answer has a
	// table and Go code.
	now := time.Now()
	calls := `[{"kind":"tool_call","tool_call":{"id":"c0","name":"load_tools","args":{"names":["fetch_url"]}}},` +
		`{"kind":"tool_call","tool_call":{"id":"c1","name":"fetch_media","args":{"mediaRef":"` + in.Refs[0].ID + `"}}},` +
		`{"kind":"tool_call","tool_call":{"id":"c2","name":"fetch_url","args":{"url":"https://example.org/tides"}}}]`
	results := `[{"kind":"tool_result","tool_result":{"call_id":"c0","content":[{"kind":"text","text":"Loaded fetch_url: call them from your next turn on."}]}},` +
		`{"kind":"tool_result","tool_result":{"call_id":"c1","content":[{"kind":"text","text":"a beach at low tide"}]}},` +
		`{"kind":"tool_result","tool_result":{"call_id":"c2","content":[{"kind":"text","text":"High tide 14:05, low tide 20:17"}]}}]`
	if err := h.st.SaveRun(bg, store.AgentRun{ID: "run-beach", Folder: "main", Started: now.Add(-5 * time.Second), Finished: now.Add(time.Minute),
		Outcome: "answered", UpToSeq: seq, Model: "gpt-4.1", Iterations: 2, CostKnown: false},
		[]store.TranscriptEntry{{Role: "assistant", Parts: []byte(calls)}, {Role: "tool", Parts: []byte(results)}}); err != nil {
		t.Fatal(err)
	}
	answer := "Low tide is in the evening:\n\n| tide | time |\n|---|---|\n| high | 14:05 |\n| low | 20:17 |\n\n" +
		"```go\nfunc lowTide() string { return \"20:17\" } // tonight\n```"
	if _, err := h.w.Send(bg, channels.OutMessage{Chat: "web:main", Text: answer}); err != nil {
		t.Fatal(err)
	}

	shots := shotDir(t)
	for _, v := range []struct {
		width int64
		dark  bool
	}{{1280, false}, {375, false}, {1280, true}, {375, true}} {
		var table, code, chips, day, title string
		var fits, bordered, coloured, opened, cards, scrolled bool
		var chatPNG, dashPNG []byte
		err := chromedp.Do(ctx,
			chromedp.EmulateViewport(v.width, 900),
			scheme(v.dark),
			chromedp.Navigate(h.base+"/login#token="+h.token),
			chromedp.WaitReady(chromedp.CSS(`#chat[data-live="true"]`)),
			chromedp.Navigate(h.base+"/r/main"),
			chromedp.WaitReady(chromedp.CSS(`.msg.assistant .rendered table`)),
			keep(&title, chromedp.Evaluate[string](`document.querySelector(".room-title").textContent`)),
			keep(&table, chromedp.Evaluate[string](`Array.from(document.querySelectorAll(".msg.assistant .rendered th")).map(e => e.textContent).join(",")`)),
			keep(&bordered, chromedp.Evaluate[bool](`parseFloat(getComputedStyle(document.querySelector(".msg.assistant .rendered td")).borderTopWidth) > 0`)),
			keep(&code, chromedp.Evaluate[string](`(document.querySelector(".msg.assistant .rendered pre .hl-k")||{}).textContent || ""`)),
			keep(&coloured, chromedp.Evaluate[bool](`(() => {
				const k = document.querySelector(".msg.assistant .rendered pre .hl-k");
				const pre = document.querySelector(".msg.assistant .rendered pre code");
				return !!k && getComputedStyle(k).color !== getComputedStyle(pre).color;
			})()`)),
			keep(&chips, chromedp.Evaluate[string](`Array.from(document.querySelectorAll(".msg.assistant .tool-chip summary")).map(e => e.textContent).join(",")`)),
			chromedp.Click(chromedp.CSS(`.msg.assistant .tool-chip:nth-child(2) summary`)),
			keep(&opened, chromedp.Evaluate[bool](`(() => {
				const d = document.querySelectorAll(".msg.assistant .tool-chip")[1];
				return d.open && d.querySelector(".tool-detail").textContent.includes("High tide 14:05") && d.querySelector(".tool-detail").offsetHeight > 0;
			})()`)),
			keep(&day, chromedp.Evaluate[string](`(document.querySelector("#messages .day")||{}).textContent || ""`)),
			keep(&fits, chromedp.Evaluate[bool](noOverflow)),
			keep(&chatPNG, chromedp.CaptureScreenshot()),

			chromedp.Navigate(h.base+"/admin"),
			chromedp.WaitReady(chromedp.CSS(`#channels tr.net.off`)),
			keep(&cards, chromedp.Evaluate[bool](`(() => {
				const row = document.querySelector("#groups tr.group");
				const head = document.querySelector("#groups thead");
				const narrow = window.innerWidth < 640;
				// Cards on a phone: no header row, each cell labelled; a table elsewhere.
				return narrow ? getComputedStyle(head).display === "none" && getComputedStyle(row).display === "block" &&
					getComputedStyle(row.querySelector("td"), "::before").content.includes("group")
					: getComputedStyle(row).display === "table-row";
			})()`)),
			keep(&scrolled, chromedp.Evaluate[bool](`(window.scrollTo(0, document.getElementById("channels").offsetTop - 70), true)`)),
			keep(&dashPNG, chromedp.CaptureScreenshot()),
		)
		if err != nil {
			t.Fatalf("%d px dark %v: %v", v.width, v.dark, err)
		}
		if title != "Main" {
			t.Errorf("room header %q, want just the room's name", title)
		}
		if table != "tide,time" || !bordered {
			t.Errorf("table headers %q, bordered %v", table, bordered)
		}
		if code != "func" || !coloured {
			t.Errorf("code keyword %q, coloured %v", code, coloured)
		}
		if chips != "looked at beach.png,read example.org" || !opened {
			t.Errorf("tool chips %q, the second opens its details %v", chips, opened)
		}
		if day != "Today" {
			t.Errorf("day separator %q", day)
		}
		if !fits {
			t.Errorf("the room overflows at %d px (dark %v)", v.width, v.dark)
		}
		if !cards {
			t.Errorf("the dashboard's groups table at %d px is not laid out for it", v.width)
		}
		name := ""
		if v.width < 1000 {
			name += "-375"
		}
		if v.dark {
			name += "-dark"
		}
		for file, png := range map[string][]byte{"web-room" + name + ".png": chatPNG, "web-dashboard-off" + name + ".png": dashPNG} {
			if err := os.WriteFile(filepath.Join(shots, file), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The dashboard: every network listed, the off one with how to turn
	// it on, the group on it marked; the tiles in plain words.
	var offRow, groupOff, tiles string
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900), scheme(false),
		chromedp.Navigate(h.base+"/admin"),
		chromedp.WaitReady(chromedp.CSS(`#channels tr.net.off`)),
		keep(&offRow, chromedp.Evaluate[string](`document.querySelector('#channels tr[data-net="telegram"]').textContent`)),
		keep(&groupOff, chromedp.Evaluate[string](`document.querySelector('#groups tr[data-group="family"] .net-off').textContent`)),
		keep(&tiles, chromedp.Evaluate[string](`document.getElementById("tiles").textContent`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(offRow, "off") || !strings.Contains(offRow, "TELEGRAM_BOT_TOKEN") {
		t.Errorf("the off network's row: %q", offRow)
	}
	if !strings.Contains(groupOff, "telegram is off") {
		t.Errorf("the group on an off network: %q", groupOff)
	}
	// The run's model has no price: the cost is unknown, not $0.
	if !strings.Contains(tiles, "unknown") || strings.Contains(tiles, "refs") || !strings.Contains(tiles, "because nobody asked") {
		t.Errorf("tiles: %q", strings.Join(strings.Fields(tiles), " "))
	}

	// An empty room says how to begin.
	var hint string
	err = chromedp.Do(ctx,
		chromedp.Navigate(h.base+"/r/team"),
		chromedp.WaitReady(chromedp.ID("empty-room")),
		keep(&hint, chromedp.Evaluate[string](`document.getElementById("empty-room").textContent`)),
	)
	if err != nil || !strings.Contains(hint, "@Andy") {
		t.Fatalf("empty room: %v, hint %q", err, hint)
	}

	// A guest, in a browser of their own, is asked their name; the host's
	// is refused, their own is kept for the visit.
	link, err := h.w.auth.createLink(bg, "main")
	if err != nil {
		t.Fatal(err)
	}
	gctx, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	defer cancel()
	var refused, you string
	err = chromedp.Do(gctx,
		chromedp.EmulateViewport(375, 800),
		chromedp.Navigate(h.base+"/join#link="+link.Token),
		chromedp.WaitReady(chromedp.CSS(`#chat[data-live="true"] #name[data-ask="true"]`)),
		chromedp.SendKeys(chromedp.ID("name"), "mum"),
		chromedp.SendKeys(chromedp.ID("text"), "hello"),
		chromedp.Click(chromedp.ID("send")),
		until(`document.getElementById("status").textContent.includes("host")`),
		keep(&refused, chromedp.Evaluate[string](`document.getElementById("status").textContent`)),
		chromedp.SetValue(chromedp.ID("name"), "Gina"),
		chromedp.Click(chromedp.ID("send")),
		until(`!!document.getElementById("you")`),
		keep(&you, chromedp.Evaluate[string](`document.getElementById("you").textContent`)),
		chromedp.Reload(),
		chromedp.WaitReady(chromedp.ID("you")),
	)
	if err != nil {
		t.Fatalf("guest: %v", err)
	}
	if !strings.Contains(refused, `"mum" is the name of this room's host`) || you != "You are Gina" {
		t.Errorf("the guest was told %q and is %q", refused, you)
	}
	if got := h.sink.Next(t); got.SenderName != "Gina" || got.Text != "hello" {
		t.Errorf("the guest's message arrived from %q: %q", got.SenderName, got.Text)
	}
}
