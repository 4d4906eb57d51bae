package groups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateFolder(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"family", true},
		{"Team_42", true},
		{"a", true},
		{"9lives", true},
		{"x-y_z", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"-lead", false},
		{"_lead", false},
		{"has space", false},
		{"../etc", false},
		{"a/b", false},
		{"a.b", false},
		{"ünï", false},
		{"global", false},
		{"failed", false},
		{"requests", false},
		{"responses", false},
		{"media", false},
		{"Media", false},
	}
	for _, tt := range tests {
		err := ValidateFolder(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateFolder(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestMatchTrigger(t *testing.T) {
	tests := []struct {
		trigger, text string
		want          bool
	}{
		{"@Andy", "@Andy hi", true},
		{"@Andy", "@andy hi", true},
		{"@Andy", "@ANDY", true},
		{"@Andy", "@Andy's idea", true},
		{"@Andy", "  @Andy, hello", true},
		{"@Andy", "@Andy\nwhat now", true},
		{"@Andy", "hello @Andy", false},
		{"@Andy", "@Andyextra", false},
		{"@Andy", "@Andy_x", false},
		{"@Andy", "@And", false},
		{"@Andy", "", false},
		{"@Andy", "Andy hi", false},
		{"a.b", "axb hi", false}, // regex characters are literal
		{"a.b", "a.b hi", true},
		{"(bot)", "(bot) hi", true},
		{"[x]*", "[x]* go", true},
		{"[x]*", "xxx go", false},
		{"@Ölaf", "@ölaf hej", true},
		{"", "anything", false},
	}
	for _, tt := range tests {
		if got := MatchTrigger(tt.trigger, tt.text); got != tt.want {
			t.Errorf("MatchTrigger(%q, %q) = %v, want %v", tt.trigger, tt.text, got, tt.want)
		}
	}
}

func TestSetDefaultsAndNeedsTrigger(t *testing.T) {
	s, err := NewSet("Andy", []Group{
		{Folder: "family", Chat: "telegram:-100", RequiresTrigger: true},
		{Folder: "team", Chat: "slack:C1", Trigger: "!bot", RequiresTrigger: true},
		{Folder: "open", Chat: "slack:C2", RequiresTrigger: false},
		{Folder: "main", Chat: "telegram:1", Main: true, RequiresTrigger: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		chat, trigger string
		needs         bool
	}{
		{"telegram:-100", "@Andy", true},
		{"slack:C1", "!bot", true},
		{"slack:C2", "@Andy", false},
		{"telegram:1", "@Andy", false},
	}
	for _, tt := range tests {
		g, ok := s.ByChat(tt.chat)
		if !ok {
			t.Fatalf("no group for %s", tt.chat)
		}
		if g.Trigger != tt.trigger || g.NeedsTrigger() != tt.needs {
			t.Errorf("%s: trigger %q needs %v, want %q %v", tt.chat, g.Trigger, g.NeedsTrigger(), tt.trigger, tt.needs)
		}
	}
	if m, ok := s.Main(); !ok || m.Folder != "main" {
		t.Errorf("main = %v %v", m, ok)
	}
	if err := s.AddAlias("family", "telegram:-1009"); err != nil {
		t.Fatal(err)
	}
	if g, ok := s.ByChat("telegram:-1009"); !ok || g.Folder != "family" || !g.HasChat("telegram:-100") {
		t.Errorf("alias lookup = %v %v", g, ok)
	}
	if err := s.AddAlias("family", "slack:C1"); err == nil {
		t.Error("alias stole another group's chat")
	}
	if _, err := NewSet("Andy", []Group{{Folder: "a", Chat: "x:1", Main: true}, {Folder: "b", Chat: "x:2", Main: true}}); err == nil {
		t.Error("two main groups accepted")
	}
}

func TestWorkspace(t *testing.T) {
	dir := t.TempDir()
	g := &Group{Folder: "family", Name: "Family"}
	ws, err := EnsureWorkspace(dir, g)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := ws.Memory()
	if err != nil || !strings.Contains(mem, "Memory for Family") {
		t.Fatalf("memory = %q, %v", mem, err)
	}
	if err := os.WriteFile(filepath.Join(ws.Root, MemoryFile), []byte("likes tea"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureWorkspace(dir, g); err != nil {
		t.Fatal(err)
	}
	if mem, _ := ws.Memory(); mem != "likes tea" {
		t.Errorf("memory overwritten: %q", mem)
	}
	if fi, err := os.Stat(ws.MediaDir()); err != nil || !fi.IsDir() {
		t.Errorf("media dir: %v", err)
	}

	if err := os.WriteFile(filepath.Join(ws.MediaDir(), "a.jpg"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws.MediaDir(), ".tmp-b.jpg"), []byte("half"), 0o600)
	if err := ws.CleanTemp(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws.MediaDir(), ".tmp-b.jpg")); !os.IsNotExist(err) {
		t.Error("half-copied file survived CleanTemp")
	}
	if _, err := os.Stat(filepath.Join(ws.MediaDir(), "a.jpg")); err != nil {
		t.Error("CleanTemp removed a finished file")
	}
	outside := filepath.Join(dir, "secret.txt")
	os.WriteFile(outside, []byte("s"), 0o600)
	os.Symlink(outside, filepath.Join(ws.Root, "link.txt"))
	tests := []struct {
		path string
		ok   bool
	}{
		{"media/a.jpg", true},
		{"./media/a.jpg", true},
		{"media/../media/a.jpg", true},
		{"../secret.txt", false},
		{"/etc/passwd", false},
		{"~/x", false},
		{"link.txt", false},
		{"media/missing.jpg", false},
		{"media", false},
		{".", false},
		{`media\a.jpg`, true},
		{"a\x00b", false},
		{"", false},
	}
	for _, tt := range tests {
		f, rel, err := ws.Open(tt.path)
		if (err == nil) != tt.ok {
			t.Errorf("Open(%q) = %v, want ok=%v", tt.path, err, tt.ok)
		}
		if err == nil {
			if rel != "media/a.jpg" || f.Name() != filepath.Join(ws.Root, "media", "a.jpg") {
				t.Errorf("Open(%q) = %s (%s), want media/a.jpg", tt.path, rel, f.Name())
			}
			f.Close()
		}
	}
}

// Media placeholders come first in a composed message, but the sender did
// not type them: the trigger may open the caption or the text after them.
func TestTriggeredAfterPlaceholders(t *testing.T) {
	const img = "[Image: sunset.jpg, 2.4MB, image/jpeg, ref:tg_k3J9x2Qa7P]"
	const voice = "[Voice: 12s, audio/ogg, ref:wa_AbCdEfGhIjKl]"
	g := &Group{Trigger: "@Andy"}
	tests := []struct {
		text string
		want bool
	}{
		{img + " @Andy what is this?", true},          // Telegram: the caption on the placeholder's line
		{img + "\n@Andy what is this?", true},         // WhatsApp, Slack: the text after the placeholders
		{img + "\n" + voice + "\n@andy listen", true}, // an album, then the question
		{img + " nice\n" + voice + " @Andy and this?", true},
		{img + " look @Andy", false},                   // not at the start of the caption
		{img + "\nhello @Andy", false},                 // not at the start of the text
		{"(Image: x, ref:tg_k3J9x2Qa7P] @Andy", false}, // a defused forgery is typed text
		{img, false},
		{"@Andy " + img, true},
	}
	for _, tt := range tests {
		if got := g.Triggered(tt.text); got != tt.want {
			t.Errorf("Triggered(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestSetAddRemoveLive(t *testing.T) {
	s, err := NewSet("Andy", []Group{{Folder: "main", Chat: "telegram:1", Main: true}})
	if err != nil {
		t.Fatal(err)
	}
	before := s.All()
	if err := s.Add("Andy", Group{Folder: "fam", Chat: "telegram:-100", Main: true, Kept: true}); err != nil {
		t.Fatal(err)
	}
	g, ok := s.ByChat("telegram:-100")
	if !ok || g.Folder != "fam" || g.Trigger != "@Andy" || g.Main {
		t.Fatalf("added group = %+v, %v; want fam with the default trigger, never main", g, ok)
	}
	if len(before) != 1 || len(s.All()) != 2 {
		t.Errorf("All before = %d, after = %d; want 1 (a copy) and 2", len(before), len(s.All()))
	}
	for _, tc := range []struct {
		name string
		g    Group
	}{
		{"folder taken", Group{Folder: "fam", Chat: "telegram:-2"}},
		{"chat taken", Group{Folder: "x", Chat: "telegram:1"}},
		{"bad folder", Group{Folder: "../x", Chat: "telegram:-3"}},
		{"reserved", Group{Folder: "global", Chat: "telegram:-4"}},
	} {
		if err := s.Add("Andy", tc.g); err == nil {
			t.Errorf("%s: Add succeeded", tc.name)
		}
	}
	if _, err := s.Remove("main"); err == nil {
		t.Error("a group of the config was removed")
	}
	if ok, err := s.Remove("fam"); !ok || err != nil {
		t.Fatalf("Remove(fam) = %v, %v", ok, err)
	}
	if _, ok := s.ByChat("telegram:-100"); ok {
		t.Error("the removed group's chat still leads to it")
	}
	if ok, err := s.Remove("fam"); ok || err != nil {
		t.Errorf("Remove twice = %v, %v; want false, nil", ok, err)
	}
}

// Replace swaps the config's groups: a changed group is a new value (the
// copy a run holds keeps its settings), a removed one goes, a new one
// comes; a group kept in the database stays unless the config now claims
// its chat; an alias learned live stays with its group; a bad list changes
// nothing.
func TestSetReplace(t *testing.T) {
	s, err := NewSet("Andy", []Group{
		{Folder: "family", Chat: "telegram:-100", RequiresTrigger: true},
		{Folder: "club", Chat: "telegram:-200", RequiresTrigger: true},
		{Folder: "gone", Chat: "telegram:-300"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []Group{{Folder: "kept", Chat: "telegram:-400", Kept: true}, {Folder: "clash", Chat: "telegram:-600", Kept: true}} {
		if err := s.Add("Andy", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddAlias("club", "telegram:-201"); err != nil {
		t.Fatal(err)
	}
	running, _ := s.ByFolder("family")
	held := *running // what a run copied when it started
	s.Disable("gone", "refused")

	left, err := s.Replace("Andy", []Group{
		{Folder: "family", Chat: "telegram:-100", Trigger: "@Fam", RequiresTrigger: true},
		{Folder: "club", Chat: "telegram:-200", RequiresTrigger: true},
		{Folder: "new", Chat: "telegram:-500"},
		{Folder: "takes", Chat: "telegram:-600"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Folder != "clash" {
		t.Errorf("left out = %+v, want the kept group whose chat the config now has", left)
	}
	var folders []string
	for _, g := range s.All() {
		folders = append(folders, g.Folder)
	}
	if got := strings.Join(folders, ","); got != "family,club,new,takes,kept" {
		t.Errorf("groups = %s, want the config's in order, then the kept one", got)
	}
	if g, _ := s.ByChat("telegram:-100"); g.Trigger != "@Fam" || !g.Triggered("@fam hi") {
		t.Errorf("family after the reload: trigger %q", g.Trigger)
	}
	if held.Trigger != "@Andy" || running.Trigger != "@Andy" {
		t.Errorf("the running run's group changed under it: %q / %q", held.Trigger, running.Trigger)
	}
	if g, ok := s.ByChat("telegram:-201"); !ok || g.Folder != "club" {
		t.Errorf("the alias learned live: %+v %v", g, ok)
	}
	if g, _ := s.ByChat("telegram:-500"); g == nil || g.Trigger != "@Andy" {
		t.Errorf("the new group: %+v", g)
	}
	for _, c := range []string{"telegram:-300"} {
		if _, ok := s.ByChat(c); ok {
			t.Errorf("the removed group's chat %s still routes", c)
		}
	}
	if _, off := s.Disabled("gone"); off {
		t.Error("a removed group's refusal stayed; if it came back it would never be looked at again")
	}
	if g, ok := s.ByFolder("kept"); !ok || !g.Kept {
		t.Error("the group kept in the database was dropped")
	}

	for _, bad := range [][]Group{
		{{Folder: "a", Chat: "telegram:-1"}, {Folder: "a", Chat: "telegram:-2"}},
		{{Folder: "a", Chat: "telegram:-1"}, {Folder: "b", Chat: "telegram:-1"}},
		{{Folder: "../x", Chat: "telegram:-1"}},
		{{Folder: "a", Chat: "telegram:-1", Main: true}, {Folder: "b", Chat: "telegram:-2", Main: true}},
	} {
		if _, err := s.Replace("Andy", bad); err == nil {
			t.Errorf("Replace(%+v) took a bad list", bad)
		}
	}
	if len(s.All()) != 5 {
		t.Errorf("a refused list changed the set: %d groups", len(s.All()))
	}
}
