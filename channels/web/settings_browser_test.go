package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/botd-dev/botd/chatctl"
	"github.com/botd-dev/botd/internal/testwait"
)

// The groups' settings on the dashboard, in a browser at 1280 and 375 px:
// each is visible with its source and nothing overflows; the admin sets
// a group's model in the form and the page shows it from "dashboard", and
// the group's next run gets it.
func TestBrowserGroupSettings(t *testing.T) {
	ctx := startBrowser(t)
	var pol *chatctl.Policy
	var h *harness
	h = newHarness(t, withSettings(&pol, &h))
	if err := chromedp.Do(ctx, chromedp.Navigate(h.base+"/login#token="+h.token), chromedp.WaitReady(chromedp.CSS(`#chat[data-live="true"]`))); err != nil {
		t.Fatal(err)
	}
	// row is the script for the family group's setting's value and source.
	row := func(name string) string {
		return `(() => { const r = document.querySelector('#settings table[data-group="family"] tr[data-setting="` + name + `"]');
			if (!r) return ""; const v = r.querySelector("td.value"), s = r.querySelector("td.source");
			const shown = e => e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().height > 0;
			return shown(v) && shown(s) ? v.textContent + " | " + s.textContent : "hidden"; })()`
	}
	for _, width := range []int64{1280, 375} {
		var fits, inCard bool
		var model, tools string
		err := chromedp.Do(ctx,
			chromedp.EmulateViewport(width, 820),
			chromedp.Navigate(h.base+"/admin"),
			chromedp.WaitVisible(chromedp.CSS(`#settings-family`)),
			keep(&model, chromedp.Evaluate[string](row("model"))),
			keep(&tools, chromedp.Evaluate[string](row("tools"))),
			keep(&fits, chromedp.Evaluate[bool](noOverflow)),
			keep(&inCard, chromedp.Evaluate[bool](`[...document.querySelectorAll('#settings tr.setting')].every(r => { const box = r.getBoundingClientRect();
				return [...r.querySelectorAll("input[type=text], textarea, button")].every(e => { const b = e.getBoundingClientRect(); return b.left >= box.left && b.right <= box.right; }); })`)),
		)
		if err != nil {
			t.Fatalf("dashboard at %d px: %v", width, err)
		}
		if !inCard {
			t.Errorf("at %d px a setting's form sticks out of its row", width)
		}
		if model != "b/config | config" || tools != "fetch_url, web_search | config" {
			t.Errorf("at %d px the settings show model %q, tools %q", width, model, tools)
		}
		if !fits {
			t.Errorf("the dashboard with the groups' settings overflows at %d px", width)
		}
	}
	// At 375 px: type a model and its fallback, Set; the form posts and
	// the answer redirects back to the group's settings.
	form := `#settings table[data-group="family"] tr[data-setting="model"] form`
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(form+` input[name="value"]`), "a/dash, b/y"),
		chromedp.Click(chromedp.CSS(form+` button.primary`)),
	); err != nil {
		t.Fatalf("set the model: %v", err)
	}
	// A look while the browser navigates fails and is taken again.
	testwait.Within(t, 60*time.Second, "the dashboard back, with the model from the dashboard", func() bool {
		var model string
		var fits bool
		err := chromedp.Do(ctx, keep(&model, chromedp.Evaluate[string](`location.hash === "#settings-family" && document.readyState === "complete" ? `+row("model")+` : ""`)),
			keep(&fits, chromedp.Evaluate[bool](noOverflow)))
		return err == nil && model == "a/dash, b/y | dashboard" && fits
	})
	family, _ := h.w.o.Groups.ByFolder("family")
	if run := pol.Run(context.Background(), family); run.Model != "dash" {
		t.Errorf("the group's next run has model %q, want the dashboard's", run.Model)
	}
}
