package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/chatctl"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/nokey"
)

// settingModels is chatctl.Models over two providers, "a" and "b".
type settingModels struct{}

func (settingModels) Resolve(name string) (string, error) {
	if p, _, ok := strings.Cut(name, "/"); !ok || (p != "a" && p != "b") {
		return "", errors.New("no configured model is called " + name)
	}
	return name, nil
}
func (settingModels) Chain(list []string) (llm.Provider, error) {
	return nokey.Provider{Message: strings.Join(list, ",")}, nil
}
func (settingModels) Default() string { return "a/default" }

// withSettings gives the dashboard the groups' settings and their changes
// through a real chatctl.Policy over the harness's database, as
// cmd/botd wires it; the family group has settings of its own.
func withSettings(pol **chatctl.Policy, h **harness) harnessOpt {
	return func(_ *Config, o *Options) {
		set, err := groups.NewSet("Andy", []groups.Group{
			{Folder: "main", Name: "Main", Chat: "web:main", Main: true},
			{Folder: "family", Name: "Family", Chat: "telegram:-100", RequiresTrigger: true, Settings: groups.Settings{
				Model: []string{"b/config"}, Prompt: "Be brief. " + strings.Repeat("Answer in full sentences, ", 8),
				Tools: []string{"fetch_url", "web_search"}, MaxCostPerDay: 0.5, Language: "German", Admins: []string{"telegram:42"}}},
		})
		if err != nil {
			panic(err)
		}
		o.Groups = set
		policy := func() *chatctl.Policy {
			if *pol == nil {
				*pol = &chatctl.Policy{DB: (*h).st.DB, Models: settingModels{}, CheckTool: agent.Config{}.CheckTool,
					Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			}
			return *pol
		}
		o.Settings = func(ctx context.Context, folder string) ([]GroupSetting, error) {
			g, _ := set.ByFolder(folder)
			var out []GroupSetting
			for _, s := range policy().Settings(ctx, g, time.UTC) {
				out = append(out, GroupSetting{Name: s.Name, Value: s.Value, Source: s.Source, Changeable: s.Changeable, Overridden: s.Overridden})
			}
			return out, nil
		}
		o.SetSetting = func(ctx context.Context, folder, name, value string) (string, error) {
			g, _ := set.ByFolder(folder)
			var no chatctl.Refusal
			if err := policy().Change(ctx, g, name, value, chatctl.ByDashboard); errors.As(err, &no) {
				return no.Error(), nil
			} else if err != nil {
				return "", err
			}
			return "", nil
		}
	}
}

// The dashboard lists each group's settings with their source; its admin
// changes a group's model (validated as /model's: a bad one refused with
// its sentence) and resets it; a forged CSRF token, a guest and an
// unknown group are refused and change nothing.
func TestDashboardSettings(t *testing.T) {
	var pol *chatctl.Policy
	var h *harness
	h = newHarness(t, withSettings(&pol, &h))
	admin := h.admin()
	_, page := h.get(admin, "/admin")
	for _, want := range []string{`id="settings-family"`, `<td class="value" data-label="value">b/config</td><td class="source" data-label="source">config</td>`,
		`German`, `fetch_url, web_search`, `$0.50`, `telegram:42`, `a/default</td><td class="source" data-label="source">default`} {
		if !strings.Contains(page, want) {
			t.Errorf("the dashboard lacks %q", want)
		}
	}
	csrf := hiddenCSRF.FindStringSubmatch(page)[1]
	family, _ := h.w.o.Groups.ByFolder("family")
	model := func() string { return pol.Run(context.Background(), family).Model }

	for _, tc := range []struct {
		name       string
		client     *http.Client
		form       url.Values
		status     int
		said       string
		modelAfter string
	}{
		{"bad model", admin, url.Values{"csrf": {csrf}, "group": {"family"}, "name": {"model"}, "value": {"z/nope"}},
			http.StatusBadRequest, "Not changed: no configured model is called z/nope", "config"},
		{"too many fallbacks", admin, url.Values{"csrf": {csrf}, "group": {"family"}, "name": {"model"}, "value": {"a/1,a/2,a/3,a/4,a/5"}},
			http.StatusBadRequest, "at most three fallbacks", "config"},
		{"empty value", admin, url.Values{"csrf": {csrf}, "group": {"family"}, "name": {"model"}, "value": {"  "}},
			http.StatusBadRequest, "give a value", "config"},
		{"forged csrf", admin, url.Values{"csrf": {"forged"}, "group": {"family"}, "name": {"model"}, "value": {"a/x"}},
			http.StatusForbidden, "CSRF", "config"},
		{"no such group", admin, url.Values{"csrf": {csrf}, "group": {"../main"}, "name": {"model"}, "value": {"a/x"}},
			http.StatusNotFound, "no such group", "config"},
		{"good model", admin, url.Values{"csrf": {csrf}, "group": {"family"}, "name": {"model"}, "value": {"a/dash, b/y"}},
			http.StatusSeeOther, "", "dash"},
		{"reset", admin, url.Values{"csrf": {csrf}, "group": {"family"}, "name": {"model"}, "value": {"a/ignored"}, "reset": {"1"}},
			http.StatusSeeOther, "", "config"},
	} {
		resp, body := h.postForm(tc.client, "/admin/settings", tc.form)
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.said) {
			t.Errorf("%s: %d, want %d saying %q:\n%s", tc.name, resp.StatusCode, tc.status, tc.said, body)
		}
		if got := model(); got != tc.modelAfter {
			t.Errorf("%s: the next run's model is %q, want %q", tc.name, got, tc.modelAfter)
		}
		if tc.name == "good model" {
			_, page := h.get(admin, "/admin")
			if !strings.Contains(page, `a/dash, b/y</td><td class="source" data-label="source">dashboard</td>`) || !strings.Contains(page, "Reset to config") {
				t.Errorf("after the change the dashboard does not show it from the dashboard with a reset")
			}
		}
	}
	// The standing instructions and the tools, checked as config check
	// checks them: a prompt of the most bytes allowed (each é two, six
	// form-encoded) is taken, a tool botd does not know is refused.
	long := strings.Repeat("é", 2000)
	for _, tc := range []struct {
		name, value string
		status      int
		said        string
	}{
		{"tools", "fetch_url, no_such_tool", http.StatusBadRequest, `Not changed: unknown tool &#34;no_such_tool&#34;`},
		{"prompt", long + "x", http.StatusBadRequest, "Not changed: the standing instructions are 4001 bytes; at most 4000."},
		{"language", "French", http.StatusBadRequest, "Not changed: &#34;language&#34; cannot be changed here"},
		{"prompt", long, http.StatusSeeOther, ""},
		{"tools", "web_search", http.StatusSeeOther, ""},
	} {
		resp, body := h.postForm(admin, "/admin/settings", url.Values{"csrf": {csrf}, "group": {"family"}, "name": {tc.name}, "value": {tc.value}})
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.said) {
			t.Errorf("%s = %.40q: %d, want %d saying %q:\n%s", tc.name, tc.value, resp.StatusCode, tc.status, tc.said, body)
		}
	}
	if run := pol.Run(context.Background(), family); run.Prompt != long || len(run.Tools) != 1 || run.Tools[0] != "web_search" || run.Language != "German" {
		t.Errorf("the next run has prompt %.20q, tools %q, language %q; want the dashboard's and the config's language", run.Prompt, run.Tools, run.Language)
	}
	_, page = h.get(admin, "/admin")
	if !strings.Contains(page, `web_search</td><td class="source" data-label="source">dashboard</td>`) || !strings.Contains(page, `<textarea name="value"`) {
		t.Error("the dashboard does not show the tools from the dashboard, or has no box for the instructions")
	}
	// A guest (a room link) cannot change a setting.
	guest, _ := h.guest(admin, "main")
	if resp, _ := h.postForm(guest, "/admin/settings", url.Values{"csrf": {csrf}, "group": {"family"}, "name": {"model"}, "value": {"a/x"}}); resp.StatusCode != http.StatusForbidden || model() != "config" {
		t.Errorf("a guest's change: %d, model %q", resp.StatusCode, model())
	}
}

// Without Options.SetSetting the settings are shown without forms, and a
// post is refused.
func TestDashboardSettingsReadOnly(t *testing.T) {
	var pol *chatctl.Policy
	var h *harness
	h = newHarness(t, withSettings(&pol, &h), func(_ *Config, o *Options) { o.SetSetting = nil })
	admin := h.admin()
	_, page := h.get(admin, "/admin")
	if !strings.Contains(page, `id="settings-family"`) || strings.Contains(page, `action="/admin/settings"`) {
		t.Error("read-only settings: want the list without forms")
	}
	csrf := hiddenCSRF.FindStringSubmatch(page)[1]
	if resp, _ := h.postForm(admin, "/admin/settings", url.Values{"csrf": {csrf}, "group": {"family"}, "name": {"model"}, "value": {"a/x"}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a change without SetSetting: %d, want 404", resp.StatusCode)
	}
}
