package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	tags   = regexp.MustCompile(`<[^>]*>`)
	spaces = regexp.MustCompile(`\s+`)
)

// pageText is what a page shows: its text without tags, spaces folded.
func pageText(page string) string {
	return spaces.ReplaceAllString(html.UnescapeString(tags.ReplaceAllString(page, "")), " ")
}

func withLease(standby bool, v LeaseView) harnessOpt {
	return func(_ *Config, o *Options) {
		o.Standby = standby
		o.Lease = func() LeaseView { return v }
	}
}

// TestStandbyServesReadsAndRefusesPosts: the web server of an instance
// standing by lets the admin log in and read the dashboard and the rooms,
// each page naming the active instance, and refuses with 503 what would
// reach the assistant or change the rooms, delivering nothing.
func TestStandbyServesReadsAndRefusesPosts(t *testing.T) {
	since := time.Date(2026, 11, 28, 12, 0, 3, 0, time.UTC)
	h := newHarness(t, withLease(true, LeaseView{This: "beta", Active: "alpha", Since: since, Epoch: 2}))
	admin := h.admin()
	want := "This botd instance (beta) is standing by: alpha answers, active since 2026-11-28 12:00:03 UTC (lease epoch 2)."

	resp, body := h.get(admin, "/admin")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard: %d", resp.StatusCode)
	}
	body = pageText(body)
	for _, w := range []string{want, "(beta) is standing by.", "Active: alpha since", "lease epoch 2"} {
		if !strings.Contains(body, w) {
			t.Errorf("the standby's dashboard lacks %q", w)
		}
	}
	csrf := h.roomCSRF(admin, "main")
	if _, room := h.get(admin, "/r/main"); !strings.Contains(pageText(room), want) {
		t.Errorf("the room page does not say the instance stands by")
	}

	resp, body = h.post(admin, "main", csrf, "Alice", "@Andy hello")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a post on a standby: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if !strings.Contains(body, "alpha answers") || !strings.Contains(body, "Nothing was posted") {
		t.Errorf("the refusal does not say who answers and that nothing was posted: %s", body)
	}
	for _, path := range []string{"/r/main/stop", "/admin/links"} {
		if resp, _ := h.postForm(admin, path, url.Values{"csrf": {csrf}, "room": {"main"}}); resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("POST %s on a standby: %d, want 503", path, resp.StatusCode)
		}
	}
	if n := h.sink.Total(); n != 0 {
		t.Errorf("a standby delivered %d messages", n)
	}
	if links, err := h.w.auth.Links(context.Background()); err != nil || len(links) != 0 {
		t.Errorf("a standby created room links: %+v", links)
	}
}

// TestActiveShowsTheLease: the active instance's dashboard names it and
// its epoch, and posts work as on a single instance.
func TestActiveShowsTheLease(t *testing.T) {
	h := newHarness(t, withLease(false, LeaseView{This: "alpha", Active: "alpha", Since: time.Now().Add(-90 * time.Second), Epoch: 3}))
	admin := h.admin()
	_, body := h.get(admin, "/admin")
	body = pageText(body)
	for _, w := range []string{"This instance (alpha) is active.", "Active: alpha since 1m ago", "lease epoch 3"} {
		if !strings.Contains(body, w) {
			t.Errorf("the active's dashboard lacks %q", w)
		}
	}
	if strings.Contains(body, "standing by") {
		t.Error("the active's dashboard says it stands by")
	}
	csrf := h.roomCSRF(admin, "main")
	if resp, body := h.post(admin, "main", csrf, "Alice", "@Andy hello"); resp.StatusCode >= 300 {
		t.Fatalf("a post on the active: %d %s", resp.StatusCode, body)
	}
	if n := h.sink.Total(); n != 1 {
		t.Errorf("delivered %d messages, want 1", n)
	}
}

// TestDashboardShowsFailingRenewals: while the lease's renewals fail (the
// one instance on SQLite runs on through a store hiccup) the dashboard
// says so and why; once they succeed, nothing is said.
func TestDashboardShowsFailingRenewals(t *testing.T) {
	var mu sync.Mutex
	problem := "renew lease botd: database is locked (5) (SQLITE_BUSY)"
	h := newHarness(t, func(_ *Config, o *Options) {
		o.LeaseTrouble = func() (string, time.Time) {
			mu.Lock()
			defer mu.Unlock()
			return problem, time.Now().Add(-3*time.Minute - 30*time.Second)
		}
	})
	admin := h.admin()
	_, body := h.get(admin, "/admin")
	if body = pageText(body); !strings.Contains(body, "The lease's renewals fail (first 3m ago): "+problem) {
		t.Errorf("the dashboard does not say the renewals fail:\n%s", body)
	}
	mu.Lock()
	problem = ""
	mu.Unlock()
	if _, body = h.get(admin, "/admin"); strings.Contains(pageText(body), "renewals fail") {
		t.Error("the dashboard still says the renewals fail once they succeed")
	}
}
