package web

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/store"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// chromiumPath is the browser these tests drive (see cmd/botd's browser
// test): BOTD_SKIP_BROWSER=1 skips them on a machine without one.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if os.Getenv("BOTD_SKIP_BROWSER") == "1" {
		t.Skip("BOTD_SKIP_BROWSER=1: browser tests skipped")
	}
	for _, p := range []string{os.Getenv("BOTD_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if st, err := os.Stat(p); p != "" && err == nil && !st.IsDir() {
			return p
		}
	}
	t.Fatal("the browser tests need Chromium at /usr/bin/chromium (or BOTD_CHROMIUM, or BOTD_SKIP_BROWSER=1)")
	return ""
}

func startBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func keep[T any](dst *T, a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := a(ctx, t)
		*dst = v
		return chromedp.Void{}, err
	}
}

// until waits for a script to be true (the hang guard is the test's
// context).
func until(js string) chromedp.Action[chromedp.Void] {
	var ok bool
	return keep(&ok, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(60*time.Second)))
}

func scheme(dark bool) chromedp.Action[chromedp.Void] {
	v := "light"
	if dark {
		v = "dark"
	}
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
		return err
	})
}

const noOverflow = `document.scrollingElement.scrollWidth <= window.innerWidth`

// The room and the dashboard in a real browser: an answer streams in and
// Stop cancels it, markdown arrives rendered, a file too large is stopped
// before upload, and no page overflows at 375 px, light or dark.
func TestBrowserRoomLive(t *testing.T) {
	ctx := startBrowser(t)
	h := newHarness(t)
	stopped := make(chan string, 1)
	h.w.SetStopper(func(chat string) bool { stopped <- chat; return true })
	bg := context.Background()
	now := time.Now()
	call := `[{"kind":"text","text":"let me look"},{"kind":"tool_call","tool_call":{"id":"c1","name":"fetch_url","args":{"url":"https://example.org/a-rather-long-address/that-goes/on-and-on/and-on-and-on-and-on"}}}]`
	result := `[{"kind":"tool_result","tool_result":{"call_id":"c1","content":[{"kind":"text","text":"` + strings.Repeat("page text ", 60) + `"}]}}]`
	if err := h.st.SaveRun(bg, store.AgentRun{ID: "run1", Folder: "main", Started: now, Finished: now.Add(2 * time.Second), Outcome: "answered",
		Model: "gpt-4.1", Iterations: 2, InputTokens: 200, OutputTokens: 20, CostKnown: true, CostMicrocents: 30000,
		Split:    &store.TokenSplit{Prompt: 58, Tools: 121, Conversation: 15, Media: 6},
		Attempts: []store.Attempt{{At: now, Provider: "fake", Model: "gpt-4.1", Outcome: "ok", Input: 200, Output: 20, Duration: time.Second, CostKnown: true, CostMicrocents: 30000}}},
		[]store.TranscriptEntry{{Role: "assistant", Parts: []byte(call)}, {Role: "tool", Parts: []byte(result)},
			{Role: "assistant", Parts: []byte(`[{"kind":"text","text":"It is a long page."}]`)}}); err != nil {
		t.Fatal(err)
	}
	const md = "**bold** and a [link](https://example.org/)\n\n```\nx := 1\n```"
	old := render
	render = func(s string) string {
		if s == md { // what format.Render(md, format.Web, 0) gives, the page's input
			return `<p><strong>bold</strong> and a <a href="https://example.org/">link</a></p><pre><code>x := 1</code></pre>`
		}
		return old(s)
	}
	t.Cleanup(func() { render = old })

	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 820),
		chromedp.Navigate(h.base+"/login#token="+h.token),
		chromedp.WaitReady(chromedp.CSS(`#chat[data-live="true"]`)),
		until(`document.getElementById("conn").textContent === "connected"`),
	)
	if err != nil {
		t.Fatal(err)
	}

	// Streaming: drafts grow in place; Stop reaches the stopper.
	live, err := h.w.BeginStream(bg, channels.OutMessage{Chat: "web:main", Text: "The rota"})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, until(`(document.querySelector(".msg.draft .text")||{}).textContent === "The rota"`)); err != nil {
		t.Fatal(err)
	}
	live.Update("The rota works in turns")
	err = chromedp.Do(ctx,
		until(`(document.querySelector(".msg.draft .text")||{}).textContent === "The rota works in turns"`),
		until(`document.querySelectorAll(".msg.draft").length === 1 && !document.getElementById("stop").hidden`),
		chromedp.Click(chromedp.ID("stop")),
	)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case chat := <-stopped:
		if chat != "web:main" {
			t.Fatalf("Stop asked to stop %q", chat)
		}
	case <-ctx.Done():
		t.Fatal("Stop never reached the stopper")
	}
	if err := live.Cancel(bg, "stopped by the room"); err != nil {
		t.Fatal(err)
	}
	var draftsLeft int
	err = chromedp.Do(ctx,
		until(`Array.from(document.querySelectorAll(".msg.assistant .note")).some(n => n.textContent === "stopped by the room")`),
		keep(&draftsLeft, chromedp.Evaluate[int](`document.querySelectorAll(".msg.draft").length`)),
	)
	if err != nil || draftsLeft != 0 {
		t.Fatalf("after Stop: %v, %d drafts left", err, draftsLeft)
	}

	// Markdown rendered, links safe, code copyable; raw HTML is text.
	h.w.Send(bg, channels.OutMessage{Chat: "web:main", Text: md})
	h.w.Send(bg, channels.OutMessage{Chat: "web:main", Text: `<img id="evil" src=x> and an-error-text-without-spaces-` + strings.Repeat("x", 200)})
	var rendered, evil bool
	err = chromedp.Do(ctx,
		until(`!!document.querySelector(".msg.assistant .rendered strong")`),
		keep(&rendered, chromedp.Evaluate[bool](`(() => {
			const a = document.querySelector(".msg.assistant .rendered a");
			return a.target === "_blank" && a.rel.includes("noopener") &&
				!!document.querySelector(".msg.assistant .rendered pre button.copy") &&
				document.querySelector(".msg.assistant .rendered strong").textContent === "bold";
		})()`)),
		until(`Array.from(document.querySelectorAll(".msg.assistant .text")).some(e => e.textContent.startsWith("<img"))`),
		keep(&evil, chromedp.Evaluate[bool](`!!document.getElementById("evil")`)),
	)
	if err != nil || !rendered || evil {
		t.Fatalf("markdown: %v, rendered %v, raw HTML became markup %v", err, rendered, evil)
	}

	// A file over the limit is refused before anything is uploaded.
	var tooLarge string
	err = chromedp.Do(ctx,
		keep(&tooLarge, chromedp.Evaluate[string](`(() => {
			const d = new DataTransfer();
			d.items.add(new File([new Uint8Array(2 << 20)], "big.bin", {type: "application/octet-stream"}));
			document.dispatchEvent(new DragEvent("drop", {dataTransfer: d, bubbles: true, cancelable: true}));
			document.getElementById("composer").requestSubmit();
			return document.getElementById("status").textContent;
		})()`)),
	)
	if err != nil || !strings.Contains(tooLarge, "Too large") || !strings.Contains(tooLarge, "1.0MB") {
		t.Fatalf("a 2 MB file: %v, status %q", err, tooLarge)
	}
	if n := h.sink.Total(); n != 0 {
		t.Fatalf("%d messages delivered; the oversized file should not have been sent", n)
	}
	var attachOK bool
	if err := chromedp.Do(ctx, keep(&attachOK, chromedp.Evaluate[bool](`(() => {
		const b = document.getElementById("attach"); b.focus();
		return document.activeElement === b && b.tagName === "BUTTON" && b.tabIndex >= 0;
	})()`))); err != nil || !attachOK {
		t.Fatalf("the attach button is not keyboard-reachable: %v", err)
	}

	// Every page at both widths, light and dark: nothing overflows.
	shots := shotDir(t)
	for _, v := range []struct {
		width int64
		dark  bool
	}{{1280, false}, {375, false}, {1280, true}, {375, true}} {
		for _, pg := range []struct{ path, ready, shot string }{
			{"/r/main", `#chat[data-live="true"]`, "web-chat"},
			{"/admin", `#runs tr.run`, "web-dashboard"},
			{"/admin/runs/run1", `#run-transcript .tool-call`, "web-run"},
		} {
			var fits bool
			var png []byte
			err := chromedp.Do(ctx,
				chromedp.EmulateViewport(v.width, 820),
				scheme(v.dark),
				chromedp.Navigate(h.base+pg.path),
				chromedp.WaitReady(chromedp.CSS(pg.ready)),
				keep(&fits, chromedp.Evaluate[bool](noOverflow)),
				keep(&png, chromedp.CaptureScreenshot()),
			)
			if err != nil {
				t.Fatalf("%s at %d px: %v", pg.path, v.width, err)
			}
			if !fits {
				t.Errorf("%s overflows at %d px (dark %v)", pg.path, v.width, v.dark)
			}
			name := pg.shot
			if v.width < 1000 {
				name += "-375"
			}
			if v.dark {
				name += "-dark"
			}
			if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The dashboard refreshes itself (every 10 s): its live part is fetched
	// and swapped in.
	var refreshes string
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 820), scheme(false),
		chromedp.Navigate(h.base+"/admin"),
		chromedp.WaitReady(chromedp.ID("dashboard")),
		until(`Number(document.getElementById("dashboard").dataset.refreshes || 0) >= 1`),
		keep(&refreshes, chromedp.Evaluate[string](`document.getElementById("refreshed").textContent`)),
	)
	if err != nil || !strings.HasPrefix(refreshes, "updated") {
		t.Fatalf("dashboard refresh: %v, %q", err, refreshes)
	}
}

// shotDir is docs/ with BOTD_UPDATE_SCREENSHOTS=1, a temporary folder
// otherwise.
func shotDir(t *testing.T) string {
	if os.Getenv("BOTD_UPDATE_SCREENSHOTS") != "1" {
		return t.TempDir()
	}
	return filepath.Join("..", "..", "docs")
}
