package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The configuration reference, docs/configuration.md, documents every key
// the components' config types have: one table row a key, its full path in
// backticks in the first cell. Key paths are read from the types (the yaml
// tags config decodes by), so a key added to a component's Config without a
// row fails TestConfigReferenceDocumentsEveryKey, naming the key.

// keyPaths lists the leaf key paths of t, as a user writes them: a map's
// key is <name> (llm.providers.<name>.api_key), a list of mappings is []
// (groups[].folder); a map or list of plain values is one key.
func keyPaths(t reflect.Type) []string {
	var out []string
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == typeOfDuration:
			out = append(out, path)
		case t.Kind() == reflect.Struct:
			for k, ft := range yamlFields(t) {
				walk(join(path, k), ft)
			}
		case t.Kind() == reflect.Map && isMapping(t.Elem()):
			walk(join(path, "<name>"), t.Elem())
		case t.Kind() == reflect.Slice && isMapping(t.Elem()):
			walk(path+"[]", t.Elem())
		default:
			out = append(out, path)
		}
	}
	walk("", t)
	sort.Strings(out)
	return out
}

// isMapping reports whether a value of t is written as a YAML mapping of
// its own keys (a struct), not a plain value.
func isMapping(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && t != typeOfDuration
}

// referenceRow is a table row of the reference: | `key` | default | meaning |.
var referenceRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// documentedKeys returns the keys the reference's table rows document.
func documentedKeys(doc string) map[string]bool {
	out := map[string]bool{}
	for _, m := range referenceRow.FindAllStringSubmatch(doc, -1) {
		out[m[1]] = true
	}
	return out
}

// checkReference returns the keys of t without a row in doc, and the rows of
// doc that name no key of t (a key renamed or removed).
func checkReference(t reflect.Type, doc string) (missing, unknown []string) {
	documented := documentedKeys(doc)
	have := map[string]bool{}
	for _, k := range keyPaths(t) {
		have[k] = true
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !have[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return missing, unknown
}

func readReference(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestConfigReferenceDocumentsEveryKey(t *testing.T) {
	missing, unknown := checkReference(schemaOf().typ, readReference(t))
	for _, k := range missing {
		t.Errorf("docs/configuration.md does not document config key %s: add a row | `%s` | default | meaning |", k, k)
	}
	for _, k := range unknown {
		t.Errorf("docs/configuration.md documents %s, which no config type has (renamed or removed?)", k)
	}
}

// TestConfigReferenceCatchesNewKeys proves the check above can fail: the
// real reference against the real Config with one more key, at the top
// level, in a component's section, in a map's entries and in a list's.
func TestConfigReferenceCatchesNewKeys(t *testing.T) {
	doc := readReference(t)
	with := func(t reflect.Type, f reflect.StructField) reflect.Type {
		fields := make([]reflect.StructField, 0, t.NumField()+1)
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				fields = append(fields, t.Field(i))
			}
		}
		return reflect.StructOf(append(fields, f))
	}
	replace := func(t reflect.Type, name string, ft reflect.Type) reflect.Type {
		fields := make([]reflect.StructField, 0, t.NumField())
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Name == name {
				f.Type = ft
			}
			fields = append(fields, f)
		}
		return reflect.StructOf(fields)
	}
	extra := reflect.StructField{Name: "BrandNew", Type: reflect.TypeOf(0), Tag: `yaml:"brand_new"`}
	channels := reflect.TypeOf(Channels{})
	llm := reflect.TypeOf(Config{}.LLM)
	providers, _ := llm.FieldByName("Providers")
	group := reflect.TypeOf(Group{})

	tests := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"top level", with(schemaOf().typ, extra), "brand_new"},
		{"beside the channels' sections", replace(schemaOf().typ, "Channels", with(channels, extra)), "channels.brand_new"},
		{"a map's entries", replace(schemaOf().typ, "LLM",
			replace(llm, "Providers", reflect.MapOf(providers.Type.Key(), with(providers.Type.Elem(), extra)))),
			"llm.providers.<name>.brand_new"},
		{"a list's entries", replace(schemaOf().typ, "Groups", reflect.SliceOf(with(group, extra))), "groups[].brand_new"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			missing, unknown := checkReference(tc.typ, doc)
			if len(missing) != 1 || missing[0] != tc.want {
				t.Errorf("missing = %q, want exactly [%s]", missing, tc.want)
			}
			if len(unknown) != 0 {
				t.Errorf("unknown = %q, want none", unknown)
			}
		})
	}

	// And a row whose key no type has is reported too.
	_, unknown := checkReference(schemaOf().typ, doc+"\n| `channels.telegram.tokne` | | |\n")
	if len(unknown) != 1 || unknown[0] != "channels.telegram.tokne" {
		t.Errorf("unknown = %q, want exactly [channels.telegram.tokne]", unknown)
	}
}

// TestKeyPaths pins the shapes keyPaths gives: leaves, map entries, list
// entries, durations and plain lists as one key.
func TestKeyPaths(t *testing.T) {
	type inner struct {
		A string   `yaml:"a"`
		D Duration `yaml:"d"`
	}
	type root struct {
		Plain  int               `yaml:"plain"`
		Sect   inner             `yaml:"sect"`
		ByName map[string]inner  `yaml:"by_name"`
		List   []inner           `yaml:"list"`
		Words  []string          `yaml:"words"`
		Env    map[string]string `yaml:"env"`
		Ptr    *inner            `yaml:"ptr"`
		Skip   int               `yaml:"-"`
		hidden int
	}
	_ = root{}.hidden
	got := strings.Join(keyPaths(reflect.TypeOf(root{})), " ")
	want := "by_name.<name>.a by_name.<name>.d env list[].a list[].d plain ptr.a ptr.d sect.a sect.d words"
	if got != want {
		t.Errorf("keyPaths = %s\nwant       %s", got, want)
	}
}

// TestDocsLinksResolve checks every relative link of README.md and the pages
// of docs/: the file it names exists and, for a link to a heading of a
// markdown file (page.md#heading), that heading does (GitHub's anchors).
func TestDocsLinksResolve(t *testing.T) {
	root := repoRoot(t)
	pages := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(p string) map[string]bool {
		if a, ok := anchors[p]; ok {
			return a
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		anchors[p] = headingAnchors(string(data))
		return anchors[p]
	}
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, l := range relativeLinks(string(data)) {
			checked++
			target, anchor, _ := strings.Cut(l, "#")
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s links to %s, which does not exist", rel, l)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[anchor] {
				t.Errorf("%s links to %s: %s has no heading with the anchor #%s", rel, l, filepath.Base(file), anchor)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d links in %d pages: the link parser lost them", checked, len(pages))
	}
}

var (
	fencedBlock = regexp.MustCompile("(?ms)^[ \t]*```.*?^[ \t]*```[ \t]*$")
	codeSpan    = regexp.MustCompile("`+[^`]*`+")
	mdLink      = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headingLine = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)
)

// relativeLinks returns the targets of the markdown links of doc that are
// not absolute URLs, outside code blocks and code spans.
func relativeLinks(doc string) []string {
	doc = fencedBlock.ReplaceAllString(doc, "")
	doc = codeSpan.ReplaceAllString(doc, "")
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(doc, -1) {
		l := m[1]
		if strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// headingAnchors returns the anchors GitHub gives doc's headings: lower
// case, punctuation dropped but for - and _, spaces as -, a repeated one
// numbered (-1, -2).
func headingAnchors(doc string) map[string]bool {
	doc = fencedBlock.ReplaceAllString(doc, "")
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingLine.FindAllStringSubmatch(doc, -1) {
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"What botd refuses", "what-botd-refuses"},
		{"`channels.telegram`", "channelstelegram"},
		{"Using the media tools from Claude Desktop / Claude Code", "using-the-media-tools-from-claude-desktop--claude-code"},
		{"Top level", "top-level"},
		{"PDFs from the real world", "pdfs-from-the-real-world"},
	} {
		if got := slug(tc.in); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
