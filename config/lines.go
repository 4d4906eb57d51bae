package config

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// lineIndex maps each key path of the file ("groups[1].trigger") to the
// line it is written on, so problems and warnings can say where to look.
func lineIndex(n *yaml.Node, path string, out map[string]int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(path, n.Content[i].Value)
			if _, dup := out[p]; !dup {
				out[p] = n.Content[i].Line
			}
			lineIndex(n.Content[i+1], p, out)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			out[p] = c.Line
			lineIndex(c, p, out)
		}
	}
}

// lineOf is the line of path, or of its nearest ancestor written in the
// file (a missing key is reported where its section is); 0 if none is.
func lineOf(lines map[string]int, path string) int {
	for path != "" {
		if l, ok := lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

// Line is the line of the config file a key path is written on (or its
// section, when the key itself is not written), 0 when unknown.
func (c *Config) Line(path string) int { return lineOf(c.lines, path) }

// At is " (line N)" for a key path written in the file, else "": for
// warnings that point at the file.
func (c *Config) At(path string) string {
	if l := c.Line(path); l > 0 {
		return " (line " + strconv.Itoa(l) + ")"
	}
	return ""
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// maxScanLines and maxScanBytes bound syntaxProblem's search, which
// parses the file once per line: a config is a few hundred lines; past
// these the parser's own line is kept.
const (
	maxScanLines = 2000
	maxScanBytes = 64 << 10
)

// syntaxProblem turns a YAML syntax error into a problem on the line the
// mistake is. yaml.v3 names the line where the enclosing block started
// (a mis-indented key deep in the file is "line 4"), so the file is parsed
// again one line longer at a time: the first prefix that fails ends at
// the line where the parser met the mistake. Some mistakes get a hint:
// an unquoted value starting with "@" (`trigger: @Andy`), a tab, or a
// block whose keys are not indented alike.
func syntaxProblem(data []byte, err error) Problem {
	msg := err.Error()
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return Problem{Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
	}
	what := m[2]
	lines := strings.SplitAfter(string(data), "\n")
	at := 0
	if len(lines) <= maxScanLines && len(data) <= maxScanBytes {
		var prefix bytes.Buffer
		for i, l := range lines {
			prefix.WriteString(l)
			var n yaml.Node
			if yaml.Unmarshal(prefix.Bytes(), &n) != nil {
				at = i + 1
				break
			}
		}
	}
	if at == 0 {
		// The parser's own line, the best there is.
		at, _ = strconv.Atoi(m[1])
		return Problem{Msg: fmt.Sprintf("invalid YAML near line %d: %s", at, what), Line: at}
	}
	text := strings.TrimRight(lines[at-1], "\r\n")
	p := Problem{Msg: fmt.Sprintf("invalid YAML at line %d: %s: %s", at, what, strconv.Quote(strings.TrimSpace(text))), Line: at}
	if h := syntaxHint(lines, at, text); h != "" {
		p.Msg += "; " + h
	}
	return p
}

// plainIndicator is a value that YAML reads as syntax unless quoted.
var plainIndicator = regexp.MustCompile(`^\s*(?:-\s+)?([A-Za-z0-9_.-]+):\s+([@` + "`" + `][^#]*?)\s*(?:#.*)?$`)

func syntaxHint(lines []string, at int, text string) string {
	if m := plainIndicator.FindStringSubmatch(text); m != nil {
		return fmt.Sprintf("quote it: %s: %s (YAML reads a value starting with %s as syntax)", m[1], strconv.Quote(m[2]), m[2][:1])
	}
	if strings.HasPrefix(strings.TrimLeft(text, " "), "\t") || strings.Contains(leading(text), "\t") {
		return "YAML indents with spaces, not tabs"
	}
	// A key indented unlike the block it is in: find the block's parent
	// (the nearest line above indented less) and its first key.
	ind := len(leading(text))
	parent := 0
	for i := at - 1; i >= 1; i-- {
		l := lines[i-1]
		if blank(l) {
			continue
		}
		if len(leading(l)) < ind {
			parent = i
			break
		}
	}
	for i := parent + 1; i < at; i++ {
		l := lines[i-1]
		if blank(l) {
			continue
		}
		if first := len(leading(l)); first != ind && (parent == 0 || first > len(leading(lines[parent-1]))) {
			return fmt.Sprintf("line %d is indented by %d spaces and line %d by %d under the same parent%s: indent them alike",
				i, first, at, ind, parentNote(parent))
		}
		break
	}
	return ""
}

func parentNote(parent int) string {
	if parent == 0 {
		return ""
	}
	return " (line " + strconv.Itoa(parent) + ")"
}

// leading is a line's indentation.
func leading(l string) string { return l[:len(l)-len(strings.TrimLeft(l, " \t"))] }

// blank is a line that holds no YAML: empty, or only a comment.
func blank(l string) bool {
	t := strings.TrimSpace(l)
	return t == "" || strings.HasPrefix(t, "#")
}
