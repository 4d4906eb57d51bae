package config

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/botd-dev/botd/internal/settings"
)

// schema is the file's shape as one Go struct type: a field for each of
// Config's own keys and one for each registered section at its key (a
// section inside another, media.generation, beside the outer one's own
// keys). checkKeys, the configuration reference's test and Changed walk
// it; Parse decodes into a value of it (tree) whose fields point into a
// Config, so every section is decoded strictly through its own type.
type schema struct {
	typ reflect.Type
	// own are Config's field indexes, in the order of typ's first fields.
	own []int
	// top are the top-level sections, in the order of typ's next fields.
	top []node
}

// node is a registered section in the schema.
type node struct {
	key string
	// typ is the schema field's type: the section's pointer type, or, for
	// a section with sections inside it, a pointer to a struct of its
	// own value (inline) and theirs.
	typ      reflect.Type
	children []node
}

var (
	schemaMu    sync.Mutex
	schemaCache *schema
	schemaKeys  string
)

// schemaOf is the schema of the sections registered now (all of them,
// once the packages' init has run; computed again only if one came
// after).
func schemaOf() *schema {
	secs := settings.Sections()
	keys := make([]string, len(secs))
	for i, s := range secs {
		keys[i] = s.Key
	}
	joined := strings.Join(keys, " ")
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if schemaCache == nil || schemaKeys != joined {
		schemaCache, schemaKeys = buildSchema(secs), joined
	}
	return schemaCache
}

// buildSchema composes Config's own fields and the sections. A section
// whose key another key already holds, or whose outer section is not
// registered, is a programming error of the component and panics.
func buildSchema(secs []settings.Section) *schema {
	byKey := map[string]settings.Section{}
	for _, s := range secs {
		byKey[s.Key] = s
	}
	sc := &schema{}
	var fields []reflect.StructField
	taken := map[string]bool{}
	ct := reflect.TypeFor[Config]()
	for i := 0; i < ct.NumField(); i++ {
		f := ct.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		taken[name] = true
		sc.own = append(sc.own, i)
		fields = append(fields, reflect.StructField{Name: f.Name, Type: reflect.PointerTo(f.Type), Tag: f.Tag})
	}
	var build func(key string) node
	build = func(key string) node {
		n := node{key: key, typ: reflect.TypeOf(byKey[key].New())}
		inner := []reflect.StructField{{Name: "Own", Type: n.typ, Tag: `yaml:",inline"`}}
		ownKeys := yamlFields(n.typ.Elem())
		for _, s := range secs {
			parent, name := splitKey(s.Key)
			if parent != key {
				continue
			}
			if _, clash := ownKeys[name]; clash {
				panic(fmt.Sprintf("config: section %s is also a key of section %s", s.Key, key))
			}
			c := build(s.Key)
			n.children = append(n.children, c)
			inner = append(inner, sectionField(c))
		}
		if len(n.children) > 0 {
			n.typ = reflect.PointerTo(reflect.StructOf(inner))
		}
		return n
	}
	for _, s := range secs {
		parent, name := splitKey(s.Key)
		if parent != "" {
			if _, ok := byKey[parent]; !ok {
				panic(fmt.Sprintf("config: section %s is registered, but not %s, which holds it", s.Key, parent))
			}
			continue
		}
		if taken[name] {
			panic(fmt.Sprintf("config: section %s is registered, but config has that key itself", s.Key))
		}
		n := build(s.Key)
		sc.top = append(sc.top, n)
		fields = append(fields, sectionField(n))
	}
	sc.typ = reflect.StructOf(fields)
	return sc
}

// sectionField is the schema's field of a section, at its last key.
func sectionField(n node) reflect.StructField {
	_, name := splitKey(n.key)
	return reflect.StructField{Name: "S_" + name, Type: n.typ, Tag: reflect.StructTag(`yaml:"` + name + `"`)}
}

// splitKey is "media.generation" as "media" and "generation".
func splitKey(key string) (parent, name string) {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// tree is c as a value of the schema: its fields point at c's own fields
// and at its sections, so decoding into it decodes into c, and walking two
// trees compares two configs key by key.
func (c *Config) tree(sc *schema) reflect.Value {
	v := reflect.New(sc.typ)
	cv := reflect.ValueOf(c).Elem()
	for i, f := range sc.own {
		v.Elem().Field(i).Set(cv.Field(f).Addr())
	}
	var fill func(n node) reflect.Value
	fill = func(n node) reflect.Value {
		own := reflect.ValueOf(c.sections[n.key])
		if len(n.children) == 0 {
			return own
		}
		w := reflect.New(n.typ.Elem())
		w.Elem().Field(0).Set(own)
		for i, ch := range n.children {
			w.Elem().Field(i + 1).Set(fill(ch))
		}
		return w
	}
	for i, n := range sc.top {
		v.Elem().Field(len(sc.own) + i).Set(fill(n))
	}
	return v
}
