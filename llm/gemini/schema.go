package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Gemini's function parameters accept an OpenAPI 3.0 subset; anything else
// is a 400 for the whole request. These are the keywords it understands.
var allowedKeys = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true,
	"enum": true, "items": true, "maxItems": true, "minItems": true,
	"properties": true, "required": true, "minProperties": true, "maxProperties": true,
	"minLength": true, "maxLength": true, "pattern": true, "example": true,
	"anyOf": true, "propertyOrdering": true, "default": true, "minimum": true, "maximum": true,
}

var allowedFormats = map[string]bool{
	"enum": true, "date-time": true, "int32": true, "int64": true, "float": true, "double": true,
}

const maxRefDepth = 8

// CleanSchema rewrites a JSON Schema into the subset Gemini accepts:
// local $refs are inlined, type arrays with "null" become nullable, const
// becomes a one-value enum, oneOf becomes anyOf, and every other unsupported
// keyword is dropped. It returns nil for a schema with no parameters, which
// Gemini wants omitted rather than an empty object.
func CleanSchema(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	rm, ok := root.(map[string]any)
	if !ok {
		return nil, errors.New("parameters schema is not an object")
	}
	c := cleaner{defs: map[string]any{}}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := rm[k].(map[string]any); ok {
			for name, v := range d {
				c.defs["#/"+k+"/"+name] = v
			}
		}
	}
	out := c.clean(rm, 0)
	if props, _ := out["properties"].(map[string]any); len(props) == 0 && out["type"] == "object" {
		return nil, nil
	}
	return out, nil
}

type cleaner struct{ defs map[string]any }

func (c cleaner) clean(s map[string]any, depth int) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		target, found := c.defs[ref].(map[string]any)
		if !found || depth >= maxRefDepth {
			// Unresolvable or recursive: an untyped object is the best
			// Gemini can be told.
			return map[string]any{"type": "object"}
		}
		merged := map[string]any{}
		for k, v := range target {
			merged[k] = v
		}
		for k, v := range s {
			if k != "$ref" {
				merged[k] = v
			}
		}
		return c.clean(merged, depth+1)
	}
	out := map[string]any{}
	for k, v := range s {
		switch k {
		case "type":
			if arr, ok := v.([]any); ok {
				var types []string
				for _, t := range arr {
					if ts, ok := t.(string); ok {
						if ts == "null" {
							out["nullable"] = true
						} else {
							types = append(types, ts)
						}
					}
				}
				if len(types) >= 1 {
					out["type"] = types[0] // Gemini allows one type only
				}
				continue
			}
			out[k] = v
		case "const":
			if sv, ok := v.(string); ok {
				out["enum"] = []any{sv}
			}
		case "oneOf", "anyOf":
			arr, ok := v.([]any)
			if !ok {
				continue
			}
			var alts []any
			for _, a := range c.cleanList(arr, depth) {
				if a.(map[string]any)["type"] == "null" {
					out["nullable"] = true
					continue
				}
				alts = append(alts, a)
			}
			if len(alts) == 1 {
				// The common Optional[T] shape collapses to T + nullable.
				for kk, vv := range alts[0].(map[string]any) {
					out[kk] = vv
				}
			} else if len(alts) > 1 {
				out["anyOf"] = alts
			}
		case "allOf":
			// Only the trivial single-schema wrapper survives.
			if arr, ok := v.([]any); ok && len(arr) == 1 {
				if m, ok := arr[0].(map[string]any); ok {
					for kk, vv := range c.clean(m, depth) {
						out[kk] = vv
					}
				}
			}
		case "properties":
			if props, ok := v.(map[string]any); ok {
				cp := map[string]any{}
				for name, ps := range props {
					if m, ok := ps.(map[string]any); ok {
						cp[name] = c.clean(m, depth)
					}
				}
				out[k] = cp
			}
		case "items":
			if m, ok := v.(map[string]any); ok {
				out[k] = c.clean(m, depth)
			}
		case "format":
			if f, ok := v.(string); ok && allowedFormats[f] {
				out[k] = v
			}
		case "enum":
			// Gemini enums are strings only.
			if arr, ok := v.([]any); ok {
				var strs []any
				for _, e := range arr {
					if s, ok := e.(string); ok {
						strs = append(strs, s)
					}
				}
				if len(strs) == len(arr) {
					out[k] = strs
				}
			}
		default:
			if allowedKeys[k] {
				out[k] = v
			}
		}
	}
	if req, ok := out["required"].([]any); ok {
		props, _ := out["properties"].(map[string]any)
		var kept []any
		for _, r := range req {
			if name, ok := r.(string); ok && props[name] != nil {
				kept = append(kept, name)
			}
		}
		if len(kept) == 0 {
			delete(out, "required")
		} else {
			out["required"] = kept
		}
	}
	if t, ok := out["type"].(string); ok {
		out["type"] = strings.ToLower(t)
	}
	return out
}

func (c cleaner) cleanList(arr []any, depth int) []any {
	out := make([]any, 0, len(arr))
	for _, v := range arr {
		if m, ok := v.(map[string]any); ok {
			out = append(out, c.clean(m, depth))
		}
	}
	return out
}
