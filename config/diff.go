package config

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Changed lists the key paths whose values differ between old and new,
// in the config's own spelling ("agent.max_cost_per_day",
// "groups[1].trigger", "channels.telegram.token"): the one home of "what
// changed" when a running botd reads its file again. Structs are compared
// field by field; a list of the same length entry by entry, one of another
// length as a whole (its path alone); a map key by key. Only paths are
// returned, never values, so a changed token can be logged as changed
// without being shown.
func Changed(old, new *Config) []string {
	var out []string
	sc := schemaOf()
	diffValue(old.tree(sc), new.tree(sc), "", &out)
	return out
}

func diffValue(a, b reflect.Value, path string, out *[]string) {
	for a.Kind() == reflect.Interface || a.Kind() == reflect.Pointer {
		if a.IsNil() || b.IsNil() || a.Type() != b.Type() {
			if a.IsNil() != b.IsNil() || a.Type() != b.Type() || !reflect.DeepEqual(a.Interface(), b.Interface()) {
				*out = append(*out, path)
			}
			return
		}
		a, b = a.Elem(), b.Elem()
		if a.Kind() == reflect.Interface || a.Kind() == reflect.Pointer {
			continue
		}
		if a.Type() != b.Type() {
			*out = append(*out, path)
			return
		}
	}
	switch a.Kind() {
	case reflect.Struct:
		if a.Type() == typeOfChannelsStruct {
			diffValue(a.FieldByName("Networks"), b.FieldByName("Networks"), path, out)
			return
		}
		t := a.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			p := path
			switch {
			case name == "" && opts == "inline":
			case name == "" || name == "-":
				continue
			default:
				p = join(path, name)
			}
			diffValue(a.Field(i), b.Field(i), p, out)
		}
	case reflect.Map:
		keys := map[string]reflect.Value{}
		for _, k := range a.MapKeys() {
			keys[k.String()] = k
		}
		for _, k := range b.MapKeys() {
			keys[k.String()] = k
		}
		names := make([]string, 0, len(keys))
		for n := range keys {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			av, bv := a.MapIndex(keys[n]), b.MapIndex(keys[n])
			p := join(path, n)
			if !av.IsValid() || !bv.IsValid() {
				*out = append(*out, p)
				continue
			}
			diffValue(av, bv, p, out)
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			*out = append(*out, path)
			return
		}
		for i := 0; i < a.Len(); i++ {
			diffValue(a.Index(i), b.Index(i), path+"["+strconv.Itoa(i)+"]", out)
		}
	default:
		if !leafEqual(a, b) {
			*out = append(*out, path)
		}
	}
}

// leafEqual compares two plain values of one type without boxing them:
// the sections are reached through pointers, and Interface copies a value
// so reached onto the heap.
func leafEqual(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// typeOfChannelsStruct is the channels section, whose keys are the
// registered networks' (its map, not a field of its own).
var typeOfChannelsStruct = reflect.TypeOf(Channels{})
