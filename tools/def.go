package tools

import "encoding/json"

// Def is a tool's definition as a model (or an MCP client) is shown it:
// its name, what it does, its arguments as a JSON Schema object and hints
// of its effects. The faces turn it into their own shapes (modelview.MCPTool).
type Def struct {
	Name        string
	Description string
	// Properties are the arguments' JSON Schemas by name; Required the
	// names that must be given, in the order declared.
	Properties map[string]any
	Required   []string
	Hints      Hints
}

// Hints are a tool's MCP annotations, each said outright.
type Hints struct{ ReadOnly, Destructive, Idempotent, OpenWorld bool }

// defOption sets one part of a Def.
type defOption func(*Def)

// propOption sets one keyword of an argument's schema.
type propOption func(map[string]any)

// newDef builds a Def. Unless annotated, a tool is taken to be
// destructive and to reach the open world, as MCP assumes.
func newDef(name string, opts ...defOption) Def {
	d := Def{Name: name, Properties: map[string]any{}, Hints: Hints{Destructive: true, OpenWorld: true}}
	for _, o := range opts {
		o(&d)
	}
	return d
}

func withDescription(desc string) defOption { return func(d *Def) { d.Description = desc } }

func annotate(h Hints) defOption { return func(d *Def) { d.Hints = h } }

// prop adds the argument name of the given JSON type.
func prop(typ, name string, opts ...propOption) defOption {
	return func(d *Def) {
		schema := map[string]any{"type": typ}
		if typ == "object" {
			schema["properties"] = map[string]any{}
		}
		for _, o := range opts {
			o(schema)
		}
		if req, ok := schema["required"].(bool); ok && req {
			delete(schema, "required")
			d.Required = append(d.Required, name)
		}
		d.Properties[name] = schema
	}
}

func withString(name string, opts ...propOption) defOption  { return prop("string", name, opts...) }
func withInteger(name string, opts ...propOption) defOption { return prop("integer", name, opts...) }
func withBoolean(name string, opts ...propOption) defOption { return prop("boolean", name, opts...) }
func withObject(name string, opts ...propOption) defOption  { return prop("object", name, opts...) }

func set(key string, v any) propOption { return func(s map[string]any) { s[key] = v } }

func required() propOption                   { return set("required", true) }
func description(desc string) propOption     { return set("description", desc) }
func minLength(n int) propOption             { return set("minLength", n) }
func maxLength(n int) propOption             { return set("maxLength", n) }
func minimum(n int) propOption               { return set("minimum", n) }
func maximum(n int) propOption               { return set("maximum", n) }
func enum(values ...string) propOption       { return set("enum", values) }
func properties(p map[string]any) propOption { return set("properties", p) }
func minProperties(n int) propOption         { return set("minProperties", n) }
func maxProperties(n int) propOption         { return set("maxProperties", n) }
func additionalProperties(v any) propOption  { return set("additionalProperties", v) }

// Schema is the arguments' JSON Schema: an object of the properties
// (written as MCP's tools/list writes it: properties and required always
// present, keys sorted).
func (d Def) Schema() json.RawMessage {
	props, req := d.Properties, d.Required
	if props == nil {
		props = map[string]any{}
	}
	if req == nil {
		req = []string{}
	}
	b, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": req})
	if err != nil {
		panic("tools: schema of " + d.Name + ": " + err.Error()) // only maps of JSON values are built
	}
	return b
}

// FirstSentence is desc up to the end of its first sentence (a '.', '?'
// or '!' before a space or the end): the line a lazy tool index shows of
// a tool before its schema is loaded, so every description's first
// sentence says on its own what the tool does and when to reach for it.
func FirstSentence(desc string) string {
	for i := 0; i < len(desc); i++ {
		switch desc[i] {
		case '.', '?', '!':
			if i+1 == len(desc) || desc[i+1] == ' ' || desc[i+1] == '\n' {
				return desc[:i+1]
			}
		}
	}
	return desc
}
