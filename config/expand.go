package config

import (
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expand replaces ${VAR} and ${VAR:-default} in every scalar of the tree.
// A plain scalar is re-resolved after expansion so `enabled: ${X:-false}`
// decodes as a bool; a quoted one stays a string.
func expand(n *yaml.Node, path string, lookup func(string) (string, bool), vars map[string][]string) Problems {
	var probs Problems
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			probs = append(probs, expand(n.Content[i+1], join(path, n.Content[i].Value), lookup, vars)...)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			probs = append(probs, expand(c, path+"["+strconv.Itoa(i)+"]", lookup, vars)...)
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return nil
		}
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			sm := envRef.FindStringSubmatch(m)
			vars[path] = append(vars[path], sm[1])
			if v, ok := lookup(sm[1]); ok && (v != "" || sm[2] == "") {
				return v
			}
			return sm[3]
		})
		if strings.Contains(n.Value, "${") {
			probs = append(probs, Problem{Path: path, Msg: "malformed ${...} reference (use ${VAR} or ${VAR:-default})"})
		}
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			n.Tag = ""
			var probe yaml.Node
			if err := yaml.Unmarshal([]byte(n.Value), &probe); err == nil && len(probe.Content) == 1 && probe.Content[0].Kind == yaml.ScalarNode {
				n.Tag = probe.Content[0].Tag
			} else {
				n.Tag = "!!str"
			}
		}
	}
	return probs
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var typeOfDuration = reflect.TypeOf(Duration(0))

// checkKeys walks the YAML tree beside the Go type and reports unknown keys
// and values of the wrong shape, each with its path, so one run of
// `botd config check` lists every mistake rather than the first. Offending
// keys are removed and offending values nulled, so the rest can still be
// decoded and validated in the same run.
func checkKeys(n *yaml.Node, path string, t reflect.Type) Problems {
	probs := checkNode(n, path, t)
	if len(probs) > 0 && n.Kind == yaml.ScalarNode {
		*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	}
	return probs
}

func checkNode(n *yaml.Node, path string, t reflect.Type) Problems {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		return Problems{{Path: path, Msg: "YAML aliases are not supported in botd config"}}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	var probs Problems
	switch {
	case t == typeOfDuration:
		if n.Kind != yaml.ScalarNode {
			*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
			return Problems{{Path: path, Msg: "expected a duration such as 30m"}}
		}
		d, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			return Problems{{Path: path, Msg: "invalid duration " + strconv.Quote(n.Value) + " (want e.g. 30s, 30m, 24h)"}}
		}
		if d < 0 {
			return Problems{{Path: path, Msg: "must not be negative"}}
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			*n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			return Problems{{Path: path, Msg: "expected a mapping"}}
		}
		fields := yamlFields(t)
		seen := map[string]bool{}
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			p := join(path, key)
			if seen[key] {
				probs = append(probs, Problem{Path: p, Msg: "duplicate key"})
				continue
			}
			seen[key] = true
			ft, ok := fields[key]
			if !ok {
				hint := suggest(key, fields)
				if hint == "" && isChannels(t) {
					// A network left out of this build (its no<name> tag)
					// is unknown too: say which ones there are.
					hint = " (this botd's channels: " + strings.Join(slices.Sorted(maps.Keys(fields)), ", ") + ")"
				}
				probs = append(probs, Problem{Path: p, Msg: "unknown key" + hint})
				continue
			}
			probs = append(probs, checkKeys(n.Content[i+1], p, ft)...)
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
		n.Content = kept
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			*n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			return Problems{{Path: path, Msg: "expected a mapping"}}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			probs = append(probs, checkKeys(n.Content[i+1], join(path, n.Content[i].Value), t.Elem())...)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			*n = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			return Problems{{Path: path, Msg: "expected a list"}}
		}
		for i, c := range n.Content {
			probs = append(probs, checkKeys(c, path+"["+strconv.Itoa(i)+"]", t.Elem())...)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
			return Problems{{Path: path, Msg: "expected a single value"}}
		}
		switch t.Kind() {
		case reflect.Bool:
			if n.Tag != "!!bool" {
				probs = append(probs, Problem{Path: path, Msg: "expected true or false, got " + strconv.Quote(n.Value)})
			}
		case reflect.Int, reflect.Int64:
			if n.Tag != "!!int" {
				probs = append(probs, Problem{Path: path, Msg: "expected a whole number, got " + strconv.Quote(n.Value)})
			}
		}
	}
	return probs
}

// typeOfNetworks marks the struct holding the registered networks'
// sections (Channels, or a test's copy of it), whose keys are theirs.
var typeOfNetworks = reflect.TypeOf(Channels{}.Networks)

// isChannels reports whether t holds the networks' sections.
func isChannels(t reflect.Type) bool {
	f, ok := t.FieldByName("Networks")
	return ok && f.Type == typeOfNetworks
}

func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" && opts == "inline" {
			// A section composed of a component's own and another's
			// (media: the media service's keys and media.generation).
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			maps.Copy(out, yamlFields(ft))
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		out[name] = f.Type
	}
	if isChannels(t) {
		// Each registered network's section, through its own type.
		for name, nc := range networkSections() {
			out[name] = reflect.TypeOf(nc)
		}
	}
	return out
}

// suggest offers the closest known key for a typo such as "tokne".
func suggest(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for k := range fields {
		if d := editDistance(key, k); d < bestD || (d == bestD && best != "" && k < best) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
