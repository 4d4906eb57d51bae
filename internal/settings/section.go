package settings

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Section is a component's part of botd's config file, registered from
// its own package (Register, in an init) the way a network registers
// channels.<name>: package config decodes the file's key strictly through
// the section's own type and calls its Validate, without importing the
// component. A package left out of the build leaves its key unknown.
type Section struct {
	// Key is where the section is written: a top-level key ("media"), or
	// a key inside another section ("media.generation"), whose keys then
	// sit beside the outer section's own in the same mapping.
	Key string
	// New returns a pointer to a fresh value of the section's type
	// holding its defaults, which a file is decoded over.
	New func() any
	// Validate reports every problem of v (a value New returned, decoded
	// over) at its full key path. shared is what it may read of the rest
	// of the file.
	Validate func(v any, shared Shared) error
}

// Shared is what a section's checks may read of other sections: the
// cross-section rules (a media job's model names a provider of
// llm.providers; an MCP token reaches a configured group).
type Shared struct {
	// Providers maps each name of llm.providers to its type.
	Providers map[string]string
	// IsGroup reports whether folder is one of groups[].folder.
	IsGroup func(folder string) bool
	// GroupTools is each entry of groups' tools allow-list, by index
	// (groups[i].tools), for the section that knows the tools.
	GroupTools [][]string
}

var (
	secMu    sync.RWMutex
	sections = map[string]Section{}
	secTypes = map[reflect.Type]string{}
)

// Register records the section at key: defaults gives its value before
// the file is decoded over it, validate its problems (nil: none beyond
// the shapes). A key is lower-case words joined by "." for a section
// inside another. Registering a key or a type twice is a programming
// error and panics, as is a malformed key: one type is one section, so
// package config can hand it back by its type.
func Register[T any](key string, defaults func() T, validate func(c *T, shared Shared) error) {
	if !validKey(key) {
		panic(fmt.Sprintf("settings: section key %q is not lower-case words (a-z, 0-9, _) joined by '.'", key))
	}
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Struct {
		panic(fmt.Sprintf("settings: section %q is a %s, not a struct", key, typ.Kind()))
	}
	secMu.Lock()
	defer secMu.Unlock()
	if _, dup := sections[key]; dup {
		panic(fmt.Sprintf("settings: section %q registered twice", key))
	}
	if other, dup := secTypes[typ]; dup {
		panic(fmt.Sprintf("settings: type %v registered for both %q and %q", typ, other, key))
	}
	s := Section{Key: key, New: func() any { v := defaults(); return &v }}
	if validate != nil {
		s.Validate = func(v any, shared Shared) error { return validate(v.(*T), shared) }
	}
	sections[key] = s
	secTypes[typ] = key
}

// Sections returns every registered section, by key (an outer section
// before those inside it).
func Sections() []Section {
	secMu.RLock()
	defer secMu.RUnlock()
	out := make([]Section, 0, len(sections))
	for _, s := range sections {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Section) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// validKey is lower-case words of a-z, 0-9 and _ (each starting with a
// letter) joined by ".".
func validKey(key string) bool {
	if key == "" {
		return false
	}
	for _, w := range strings.Split(key, ".") {
		if w == "" || w[0] < 'a' || w[0] > 'z' {
			return false
		}
		for i := 0; i < len(w); i++ {
			c := w[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
				return false
			}
		}
	}
	return true
}
