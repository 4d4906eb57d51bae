// Package groups holds the registered groups: folder rules, trigger
// matching and each group's workspace (memory file and media folder).
package groups

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/botd-dev/botd/mediaregistry"
)

var folderRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// reserved folder names collide with directories botd itself keeps beside
// group folders (ipc/<folder>/requests, data/media, ...).
var reserved = map[string]bool{GlobalFolder: true, "failed": true, "requests": true, "responses": true, "media": true}

// ValidateFolder reports why name cannot be a group folder, or nil.
func ValidateFolder(name string) error {
	if name == "" {
		return errors.New("must not be empty")
	}
	if !folderRule.MatchString(name) {
		return fmt.Errorf("%q is not a valid folder name (letters, digits, _ and -, starting with a letter or digit, at most 64)", name)
	}
	if reserved[strings.ToLower(name)] {
		return fmt.Errorf("%q is a reserved name", name)
	}
	return nil
}

// Channels botd knows, sorted; a chat id is
// "<channel>:<native id>". Each network adds itself (RegisterNetwork).
var Channels []string

// chatRules holds each network's check of a native chat id (nil: any id
// without spaces).
var chatRules = map[string]func(native string) error{}

// RegisterNetwork makes name a channel of chat ids, whose native part
// valid checks (nil accepts any without spaces). A network calls it once,
// from its package's init (through channels.Register); a name taken twice
// panics.
func RegisterNetwork(name string, valid func(native string) error) {
	if _, ok := chatRules[name]; ok || name == "" {
		panic(fmt.Sprintf("groups: network %q registered twice or unnamed", name))
	}
	chatRules[name] = valid
	Channels = append(Channels, name)
	slices.Sort(Channels)
}

// ValidateChatID checks the "<channel>:<native id>" shape, and the native
// id against its network's rule.
func ValidateChatID(id string) error {
	ch, native, ok := strings.Cut(id, ":")
	if !ok || native == "" {
		return fmt.Errorf("%q must look like <channel>:<id>, e.g. telegram:-1001234567890", id)
	}
	valid, known := chatRules[ch]
	if !known {
		return fmt.Errorf("%q: unknown channel %q (want one of %s)", id, ch, strings.Join(Channels, ", "))
	}
	if strings.ContainsFunc(native, unicode.IsSpace) {
		return fmt.Errorf("%q must not contain spaces", id)
	}
	if valid != nil {
		if err := valid(native); err != nil {
			return err // the network's words, naming the id
		}
	}
	return nil
}

// Group is one registered chat and its folder.
type Group struct {
	Folder  string
	Name    string
	Chat    string
	Trigger string // empty means "@" + assistant name
	// RequiresTrigger false means every message starts a run.
	RequiresTrigger bool
	Main            bool
	// Aliases are further chat ids that lead to this group, e.g. a
	// Telegram group's new id after it was migrated to a supergroup.
	Aliases []string
	// Kept marks a group approved live (a pairing code) and kept in the
	// database rather than the config; only such a group can be removed
	// while botd runs.
	Kept bool
	// Settings are the group's own choices (groups[].admins, model,
	// prompt, tools, max_cost_per_day, language).
	Settings Settings
}

// Settings are a group's own choices from the config; what an admin
// changes from the chat is kept in the database over them (chatctl).
type Settings struct {
	Admins        []string
	Model         []string
	Prompt        string
	Tools         []string
	MaxCostPerDay float64 // USD; 0 is agent.max_cost_per_day
	Language      string
}

// aliasMu guards every group's Aliases. Migrations are rare, so one lock
// for all groups costs nothing and keeps Group a plain value.
var aliasMu sync.RWMutex

// ChatIDs lists every chat of the group; media refs are scoped to these.
func (g *Group) ChatIDs() []string {
	aliasMu.RLock()
	defer aliasMu.RUnlock()
	return append([]string{g.Chat}, g.Aliases...)
}

// HasChat reports whether chat belongs to the group.
func (g *Group) HasChat(chat string) bool {
	if chat == g.Chat {
		return true
	}
	aliasMu.RLock()
	defer aliasMu.RUnlock()
	for _, a := range g.Aliases {
		if a == chat {
			return true
		}
	}
	return false
}

// NeedsTrigger reports whether a message must start with the trigger.
func (g *Group) NeedsTrigger() bool { return g.RequiresTrigger && !g.Main }

// Triggered reports whether text addresses the assistant: the trigger at the
// very start (after spaces) of what the sender typed, case-insensitively,
// followed by a non-word character or the end. The media placeholders botd
// puts first are not typed, so the trigger may open the text after them or
// a placeholder's caption ("[Image: …] @Andy what is this?"). The trigger
// is compared literally, never as a regex.
func (g *Group) Triggered(text string) bool {
	for _, typed := range mediaregistry.Typed(text) {
		if MatchTrigger(g.Trigger, typed) {
			return true
		}
	}
	return false
}

// MatchTrigger is Triggered for a bare trigger string.
func MatchTrigger(trigger, text string) bool {
	if trigger == "" {
		return false
	}
	text = strings.TrimLeftFunc(text, unicode.IsSpace)
	if len(text) < len(trigger) {
		return false
	}
	// Compare rune by rune so case folding works beyond ASCII without
	// allocating a lowered copy of a long message.
	rest := text
	for _, tr := range trigger {
		r, size := utf8.DecodeRuneInString(rest)
		if size == 0 || !equalFold(r, tr) {
			return false
		}
		rest = rest[size:]
	}
	if rest == "" {
		return true
	}
	next, _ := utf8.DecodeRuneInString(rest)
	return !isWordRune(next)
}

func equalFold(a, b rune) bool {
	return a == b || unicode.ToLower(a) == unicode.ToLower(b)
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Set is the registered groups, indexed by folder and by chat. It is safe
// for concurrent use: a chat migration adds an alias while the IPC host and
// the router look chats up.
type Set struct {
	mu     sync.RWMutex
	list   []*Group
	folder map[string]*Group
	chat   map[string]*Group
	// disabled holds why a group's folder was refused at start; such a
	// group's messages are stored but not answered.
	disabled map[string]string
}

// NewSet builds the set, defaulting each trigger to "@"+assistantName.
func NewSet(assistantName string, gs []Group) (*Set, error) {
	s := &Set{folder: map[string]*Group{}, chat: map[string]*Group{}}
	mains := 0
	for i := range gs {
		g := gs[i]
		if err := ValidateFolder(g.Folder); err != nil {
			return nil, fmt.Errorf("group %d folder: %w", i, err)
		}
		if _, dup := s.folder[g.Folder]; dup {
			return nil, fmt.Errorf("group folder %q used twice", g.Folder)
		}
		if g.Trigger == "" {
			g.Trigger = "@" + assistantName
		}
		if g.Main {
			if mains++; mains > 1 {
				return nil, errors.New("more than one main group")
			}
		}
		gp := &g
		s.list = append(s.list, gp)
		s.folder[g.Folder] = gp
		for _, c := range gp.ChatIDs() {
			if _, dup := s.chat[c]; dup {
				return nil, fmt.Errorf("chat %q registered twice", c)
			}
			s.chat[c] = gp
		}
	}
	return s, nil
}

// All returns the groups in config order, then those added live. The
// slice is a copy: a group added or removed later does not change it.
func (s *Set) All() []*Group {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.list)
}

// Add registers a group while botd runs (a chat approved live): its
// folder and chat must be free. The trigger defaults as in NewSet; a
// group added live is never the main group.
func (s *Set) Add(assistantName string, g Group) error {
	if err := ValidateFolder(g.Folder); err != nil {
		return fmt.Errorf("group folder: %w", err)
	}
	if g.Trigger == "" {
		g.Trigger = "@" + assistantName
	}
	g.Main = false
	g.Aliases = slices.Clone(g.Aliases)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.folder[g.Folder]; dup {
		return fmt.Errorf("group folder %q is already used", g.Folder)
	}
	for _, c := range g.ChatIDs() {
		if other, dup := s.chat[c]; dup {
			return fmt.Errorf("chat %q already belongs to group %q", c, other.Folder)
		}
	}
	gp := &g
	s.list = append(s.list, gp)
	s.folder[g.Folder] = gp
	for _, c := range gp.ChatIDs() {
		s.chat[c] = gp
	}
	return nil
}

// Remove unregisters a group added live (Kept); a group of the config
// stays until it is taken out of the file. It reports whether the group
// was there to remove.
func (s *Set) Remove(folder string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.folder[folder]
	if !ok {
		return false, nil
	}
	if !g.Kept {
		return false, fmt.Errorf("group %q is in the config file; remove it there", folder)
	}
	delete(s.folder, folder)
	for _, c := range g.ChatIDs() {
		if s.chat[c] == g {
			delete(s.chat, c)
		}
	}
	s.list = slices.DeleteFunc(s.list, func(x *Group) bool { return x == g })
	return true, nil
}

// Replace swaps the groups of the config for list, the config read again
// while botd runs. A group whose folder stays gets its new entry as a new
// value (a run holds a copy of the one it started with, so nothing changes
// under it), one no longer listed is dropped, one new is added; the chat
// ids a group learned live (AddAlias) stay while its chat does. The groups
// kept in the database (Kept) stay too, after the config's; one that now
// clashes with the config's is left out and returned, as at start. The
// list is checked whole first: on an error nothing changed.
func (s *Set) Replace(assistantName string, list []Group) (left []Group, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next []*Group
	folder, chat := map[string]*Group{}, map[string]*Group{}
	mains := 0
	for i := range list {
		g := list[i]
		if err := ValidateFolder(g.Folder); err != nil {
			return nil, fmt.Errorf("group %d folder: %w", i, err)
		}
		if _, dup := folder[g.Folder]; dup {
			return nil, fmt.Errorf("group folder %q used twice", g.Folder)
		}
		if g.Trigger == "" {
			g.Trigger = "@" + assistantName
		}
		if g.Main {
			if mains++; mains > 1 {
				return nil, errors.New("more than one main group")
			}
		}
		g.Kept = false
		g.Aliases = slices.Clone(g.Aliases)
		if old, ok := s.folder[g.Folder]; ok && !old.Kept && old.Chat == g.Chat {
			for _, a := range old.ChatIDs()[1:] {
				if !slices.Contains(g.Aliases, a) {
					g.Aliases = append(g.Aliases, a)
				}
			}
		}
		gp := &g
		for _, c := range gp.ChatIDs() {
			if _, dup := chat[c]; dup {
				return nil, fmt.Errorf("chat %q registered twice", c)
			}
			chat[c] = gp
		}
		next = append(next, gp)
		folder[g.Folder] = gp
	}
	for _, k := range s.list {
		if !k.Kept {
			continue
		}
		clash := folder[k.Folder] != nil
		for _, c := range k.ChatIDs() {
			clash = clash || chat[c] != nil
		}
		if clash {
			left = append(left, copyOf(k))
			continue
		}
		next = append(next, k)
		folder[k.Folder] = k
		for _, c := range k.ChatIDs() {
			chat[c] = k
		}
	}
	for f := range s.disabled {
		if folder[f] == nil {
			// A folder refused at start and now gone: if it comes back,
			// it is looked at again.
			delete(s.disabled, f)
		}
	}
	s.list, s.folder, s.chat = next, folder, chat
	return left, nil
}

// copyOf is g as a value, its aliases read under their lock.
func copyOf(g *Group) Group {
	c := *g
	c.Aliases = g.ChatIDs()[1:]
	return c
}

// ByFolder finds a group by its folder.
func (s *Set) ByFolder(folder string) (*Group, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, ok := s.folder[folder]
	return g, ok
}

// ByChat finds the group a chat belongs to.
func (s *Set) ByChat(chat string) (*Group, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, ok := s.chat[chat]
	return g, ok
}

// Disable marks the group in folder as not served, with the reason (a
// sentence naming the path). The first reason is kept.
func (s *Set) Disable(folder, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.disabled == nil {
		s.disabled = map[string]string{}
	}
	if _, ok := s.disabled[folder]; !ok {
		s.disabled[folder] = reason
	}
}

// Disabled reports why the group in folder is not served, or false.
func (s *Set) Disabled(folder string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.disabled[folder]
	return r, ok
}

// Main returns the main group, if one is configured.
func (s *Set) Main() (*Group, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, g := range s.list {
		if g.Main {
			return g, true
		}
	}
	return nil, false
}

// AddAlias makes chat another id of the group in folder, for chats that
// change id (Telegram group → supergroup migration).
func (s *Set) AddAlias(folder, chat string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.folder[folder]
	if !ok {
		return fmt.Errorf("unknown group %q", folder)
	}
	if other, taken := s.chat[chat]; taken {
		if other == g {
			return nil
		}
		return fmt.Errorf("chat %q already belongs to group %q", chat, other.Folder)
	}
	// Copy on write: readers holding the old slice from ChatIDs keep a
	// consistent view.
	aliasMu.Lock()
	g.Aliases = append(append([]string(nil), g.Aliases...), chat)
	aliasMu.Unlock()
	s.chat[chat] = g
	return nil
}

// Workspace is a group's folder under groups_dir.
type Workspace struct {
	Root string // groups/<folder>
}

// MemoryFile is the group's long-term memory, part of every system prompt.
const MemoryFile = "MEMORY.md"

const memoryTemplate = `# Memory for %s

Notes the assistant keeps about this group: names, preferences, recurring
plans. Edit freely; the assistant reads this file before every answer.
`

// EnsureWorkspace creates groups/<folder>/ with media/ and, on first use,
// the memory file. An existing memory file is never overwritten. A folder
// botd did not create (a symlink in place of the group folder or media/)
// is refused: it could point into another group or anywhere on disk.
func EnsureWorkspace(groupsDir string, g *Group) (Workspace, error) {
	w := Workspace{Root: filepath.Join(groupsDir, g.Folder)}
	root, err := w.create()
	if err != nil {
		return Workspace{}, fmt.Errorf("group %s workspace: %w", g.Folder, err)
	}
	defer root.Close()
	if err := root.Mkdir("media", 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return Workspace{}, fmt.Errorf("group %s workspace: %w", g.Folder, err)
	}
	if fi, err := root.Lstat("media"); err != nil || realDir(w.MediaDir(), fi) != nil {
		if err == nil {
			err = realDir(w.MediaDir(), fi)
		}
		return Workspace{}, fmt.Errorf("group %s workspace: %w", g.Folder, err)
	}
	f, err := root.OpenFile(MemoryFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	switch {
	case errors.Is(err, os.ErrExist):
	case err != nil:
		return Workspace{}, fmt.Errorf("group %s memory file: %w", g.Folder, err)
	default:
		name := g.Name
		if name == "" {
			name = g.Folder
		}
		_, werr := fmt.Fprintf(f, memoryTemplate, name)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return Workspace{}, fmt.Errorf("group %s memory file: %w", g.Folder, werr)
		}
	}
	return w, nil
}

// create makes the folder (and groups_dir above it) when missing and
// opens it with OpenRoot, which refuses a link or a file in its place.
func (w Workspace) create() (*os.Root, error) {
	if err := os.MkdirAll(filepath.Dir(w.Root), 0o750); err != nil {
		return nil, err
	}
	if err := os.Mkdir(w.Root, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	return w.OpenRoot()
}

// TempPrefix starts the name of a file being written into a group folder;
// it is renamed into place when whole.
const TempPrefix = ".tmp-"

// Writing reports whether rel (inside a group folder) names a file still
// being written: counted toward the disk budget, never evicted.
func Writing(rel string) bool { return strings.HasPrefix(path.Base(rel), TempPrefix) }

// CleanTemp removes half-copied media a crash left in media/ and
// media/inline/ (files written as ".tmp-<name>" and renamed into place).
// Call it at start, before the host serves requests.
func (w Workspace) CleanTemp() error {
	root, err := w.OpenRoot()
	if err != nil {
		return fmt.Errorf("clean %s: %w", w.MediaDir(), err)
	}
	defer root.Close()
	for _, dir := range []string{"media", "media/inline"} {
		d, err := root.Open(dir)
		if errors.Is(err, os.ErrNotExist) && dir != "media" {
			continue
		}
		if err != nil {
			return fmt.Errorf("clean %s: %w", w.MediaDir(), err)
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return fmt.Errorf("clean %s: %w", w.MediaDir(), err)
		}
		for _, n := range names {
			if strings.HasPrefix(n, TempPrefix) {
				root.Remove(dir + "/" + n)
			}
		}
	}
	return nil
}

// MediaDir is where fetched media is materialised for the agent.
func (w Workspace) MediaDir() string { return filepath.Join(w.Root, "media") }
