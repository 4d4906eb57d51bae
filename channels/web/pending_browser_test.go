package web

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/botd-dev/botd/internal/testwait"
)

// The dashboard's chats waiting for approval fit at 1280 and 375 px, and
// its Approve button approves the chat: the list is empty afterwards.
func TestBrowserPendingChats(t *testing.T) {
	ctx := startBrowser(t)
	var mu sync.Mutex
	waiting := true
	var decided []string
	var h *harness
	h = newHarness(t, func(_ *Config, o *Options) {
		o.Pending = func(context.Context) ([]PendingChat, error) {
			mu.Lock()
			defer mu.Unlock()
			if !waiting {
				return nil, nil
			}
			return []PendingChat{{Code: "ABCD-EF23", Chat: "telegram:-1001234567890123", Name: "A book club with a " + strings.Repeat("very ", 12) + "long name",
				Kind: "group", By: "Ann", Asked: h.w.now().Add(-5 * time.Minute)}}, nil
		}
		o.Decide = func(_ context.Context, code string, approve bool) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			decided = append(decided, code)
			waiting = false
			return "approved", nil
		}
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(h.base+"/login#token="+h.token), chromedp.WaitReady(chromedp.CSS(`#chat[data-live="true"]`))); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int64{1280, 375} {
		var fits bool
		err := chromedp.Do(ctx,
			chromedp.EmulateViewport(width, 820),
			chromedp.Navigate(h.base+"/admin"),
			chromedp.WaitVisible(chromedp.CSS(`#pending-chats tr.pending-chat button.primary`)),
			keep(&fits, chromedp.Evaluate[bool](noOverflow)),
		)
		if err != nil {
			t.Fatalf("dashboard at %d px: %v", width, err)
		}
		if !fits {
			t.Errorf("the dashboard with a chat waiting overflows at %d px", width)
		}
	}
	// The click leaves the page (the form posts, the answer redirects back).
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#pending-chats tr.pending-chat button.primary`))); err != nil {
		t.Fatalf("approve: %v", err)
	}
	testwait.Within(t, 60*time.Second, "the approval reaching the server", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(decided) > 0
	})
	// The browser follows the redirect back to the list, now empty; a
	// look while it navigates fails and is taken again.
	testwait.Within(t, 60*time.Second, "the dashboard back, without the chat", func() bool {
		var back bool
		err := chromedp.Do(ctx, keep(&back, chromedp.Evaluate[bool](`location.hash === "#pending-chats" && document.readyState === "complete" &&
			document.getElementById("pending-chats") !== null && document.querySelectorAll("#pending-chats tr.pending-chat").length === 0`)))
		return err == nil && back
	})
	mu.Lock()
	defer mu.Unlock()
	if len(decided) != 1 || decided[0] != "ABCD-EF23" {
		t.Errorf("decided %q, want the one code once", decided)
	}
}
