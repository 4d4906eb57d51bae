package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium is the browser the browser tests drive: Debian's package
// (`apt-get install -y chromium`, which .ci/run does). Missing, the tests
// fail, so CI cannot pass without them; BOTD_SKIP_BROWSER=1 skips them on
// a machine without it.
func chromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("BOTD_SKIP_BROWSER") == "1" {
		t.Skip("BOTD_SKIP_BROWSER=1: browser tests skipped")
	}
	for _, p := range []string{os.Getenv("BOTD_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	t.Fatal("the browser tests need Chromium at /usr/bin/chromium: run `apt-get install -y chromium` " +
		"(or set BOTD_CHROMIUM to its path, or BOTD_SKIP_BROWSER=1 to skip these tests)")
	return ""
}

// browser starts a headless Chromium for the test and returns a context
// for its actions, bounded in time.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 820),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	// The first call starts the browser and must not carry a deadline:
	// that would end the browser with it.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// into runs a and keeps its value in dst.
func into[T any](dst *T, a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := a(ctx, t)
		*dst = v
		return chromedp.Void{}, err
	}
}

const browserConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
channels:
  web: {enabled: true, listen: "127.0.0.1:0"}
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: main, name: Main, chat: "web:main", main: true}
`

// webRef is the image a question in the web room is about: the
// placeholder captioned "look at this".
var webRef = regexp.MustCompile(`ref:(wb_[0-9A-Za-z]+)\](?: |\\n)look at this`)

const (
	greeting    = "Hello Ann! Send me a picture and I will look at it."
	imageAnswer = "A colourful gradient: blue on the right, warmer towards the bottom."
	filesAnswer = "Two text files arrived."
)

// newWebModel is the fake model of the browser test (OpenAI wire): it
// asks for the image captioned "look at this" with fetch_media, and once
// the result holds it, describes it.
func newWebModel(t *testing.T) *fakeModel {
	m := &fakeModel{t: t, wire: "openai"}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.requests = append(m.requests, string(body))
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		text := newText(body)
		switch {
		case strings.Contains(string(body), `"tool_call_id"`):
			m.text(w, imageAnswer)
		case webRef.MatchString(text):
			m.toolCall(w, "fetch_media", fmt.Sprintf(`{"mediaRef":%q}`, webRef.FindStringSubmatch(text)[1]))
		case strings.Contains(text, "two files"):
			m.text(w, filesAnswer)
		default:
			m.text(w, greeting)
		}
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// The whole way in a real browser: log in with the printed link, talk,
// attach an image (file picker) and files (drop and paste), see the
// assistant fetch the image and answer, then find the run, its tokens and
// the fetch on the dashboard.
func TestBrowserChatAndDashboard(t *testing.T) {
	ctx := browser(t)
	model := newWebModel(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(browserConfig, model.srv.URL))
	img := pngOf(t, 64, 48)
	imgPath := filepath.Join(dir, "gradient.png")
	if err := os.WriteFile(imgPath, img, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startBotdEnv(t, dir, minimalEnv(dir), "run", "--config", "botd.yaml")
	base, token := p.urlLine(t)

	shots := screenshotDir(t)
	var chatPNG, dashPNG []byte
	var answers, images, downloads int
	var dropped int
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/login#token="+token),
		chromedp.WaitVisible(chromedp.ID("composer")),
		chromedp.WaitReady(chromedp.CSS(`#chat[data-live="true"]`)),
		chromedp.SetValue(chromedp.ID("name"), "Ann"),
		chromedp.SendKeys(chromedp.ID("text"), "Hello there"),
		chromedp.Click(chromedp.ID("send")),
		waitText(".msg.assistant .text", greeting),

		// An image through the file picker, captioned.
		chromedp.SetUploadFiles(chromedp.ID("file"), []string{imgPath}),
		chromedp.WaitVisible(chromedp.CSS("#pending .chip")),
		chromedp.SendKeys(chromedp.ID("text"), "look at this"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(".msg .file img")),
		waitText(".msg.assistant .text", imageAnswer),

		// Two files: one dropped on the page, one pasted into the text.
		into(&dropped, chromedp.Evaluate[int](`(() => {
			const drop = new DataTransfer();
			drop.items.add(new File(["dropped notes"], "dropped.txt", {type: "text/plain"}));
			document.dispatchEvent(new DragEvent("drop", {dataTransfer: drop, bubbles: true, cancelable: true}));
			const paste = new DataTransfer();
			paste.items.add(new File(["pasted notes"], "pasted.txt", {type: "text/plain"}));
			document.getElementById("text").dispatchEvent(new ClipboardEvent("paste", {clipboardData: paste, bubbles: true, cancelable: true}));
			return document.querySelectorAll("#pending .chip").length;
		})()`)),
		chromedp.SendKeys(chromedp.ID("text"), "two files"),
		chromedp.Click(chromedp.ID("send")),
		waitText(".msg.assistant .text", filesAnswer),
		into(&answers, chromedp.Evaluate[int](`document.querySelectorAll(".msg.assistant").length`)),
		into(&images, chromedp.Evaluate[int](`document.querySelectorAll(".msg .file img").length`)),
		into(&downloads, chromedp.Evaluate[int](`Array.from(document.querySelectorAll(".msg .download")).filter(a => a.textContent.endsWith(".txt")).length`)),
		into(&chatPNG, chromedp.CaptureScreenshot()),

		chromedp.Click(chromedp.ID("dashboard-link")),
		chromedp.WaitVisible(chromedp.ID("dashboard")),
		waitText("#runs tr.run", "fetch_media"),
		into(&dashPNG, chromedp.FullScreenshot(100)),
	)
	if err != nil {
		t.Fatalf("browser: %v\nbotd logs:\n%s", err, p.Logs())
	}
	if dropped != 2 {
		t.Errorf("%d files pending after a drop and a paste, want 2", dropped)
	}
	if answers != 3 || images != 1 || downloads != 2 {
		t.Fatalf("the page shows %d answers, %d images, %d text files; want 3, 1, 2", answers, images, downloads)
	}

	// Lazy: the question carried the placeholder, only the fetch the bytes.
	var asked, fetched bool
	b64 := base64.StdEncoding.EncodeToString(img)
	for _, req := range model.Requests() {
		if webRef.MatchString(newText([]byte(req))) && !strings.Contains(req, b64) {
			asked = true
		}
		if strings.Contains(req, `"tool_call_id"`) && strings.Contains(req, b64) {
			fetched = true
		}
	}
	if !asked || !fetched {
		t.Fatalf("model requests: placeholder without bytes %v, image after fetch_media %v", asked, fetched)
	}

	// The dashboard lists the run with its tokens and the fetch.
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.Search(`//tr[contains(@class,"run")][contains(., "fetch_media")]`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(row, "100 in / 10 out") || !strings.Contains(row, "gpt-4.1") {
		t.Errorf("run row %q shows no tokens or no model", row)
	}
	if !strings.Contains(row, "look at this") || !strings.Contains(row, "answered") {
		t.Errorf("run row %q lacks the trigger or the outcome", row)
	}
	// The run the agent recorded gives the image answer its chip, from
	// what the store kept of the call when it saved the run.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/r/main"),
		waitText(".msg.assistant .tool-chip summary", "looked at gradient.png")); err != nil {
		t.Fatalf("the room's chips: %v\nbotd logs:\n%s", err, p.Logs())
	}
	for name, png := range map[string][]byte{"web-chat.png": chatPNG, "web-dashboard.png": dashPNG} {
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.stop(t)
}

// screenshotDir is docs/ when BOTD_UPDATE_SCREENSHOTS=1 (to refresh the
// pictures in the README), a temporary folder otherwise.
func screenshotDir(t *testing.T) string {
	if os.Getenv("BOTD_UPDATE_SCREENSHOTS") != "1" {
		return t.TempDir()
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "docs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitText waits until an element matching sel contains text.
func waitText(sel, text string) chromedp.Action[chromedp.Void] {
	js := fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).some(e => e.textContent.includes(%q))`, sel, text)
	var ok bool
	return into(&ok, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(90*time.Second)))
}
