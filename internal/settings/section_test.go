package settings

import (
	"errors"
	"strings"
	"testing"
)

type testA struct {
	N int `yaml:"n"`
}

type testB struct {
	S string `yaml:"s"`
}

// mustPanic runs f and returns what it panicked with, failing the test
// when it did not panic.
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("did not panic")
		}
		msg, _ = r.(string)
	}()
	f()
	return ""
}

// sectionAt is the registered section at key.
func sectionAt(t *testing.T, key string) Section {
	t.Helper()
	for _, s := range Sections() {
		if s.Key == key {
			return s
		}
	}
	t.Fatalf("no section %q among %v", key, Sections())
	return Section{}
}

// A registered section gives a fresh value over its defaults each time,
// checks it with what the rest of the file shares, and sorts by key with
// the outer section first; a key or a type twice, a malformed key or a
// section that is not a struct is refused.
func TestRegister(t *testing.T) {
	Register("zz_test_a", func() testA { return testA{N: 3} }, func(c *testA, s Shared) error {
		if _, ok := s.Providers["p"]; !ok || c.N < 0 {
			return errors.New("bad")
		}
		return nil
	})
	Register("zz_test_a.inner", func() testB { return testB{S: "x"} }, nil)

	a := sectionAt(t, "zz_test_a")
	v1, v2 := a.New().(*testA), a.New().(*testA)
	if v1 == v2 || v1.N != 3 {
		t.Fatalf("New = %p %+v, %p: want fresh values holding the defaults", v1, v1, v2)
	}
	v1.N = 7
	if v2.N != 3 || a.New().(*testA).N != 3 {
		t.Error("a change to one value reached the defaults")
	}
	if err := a.Validate(v1, Shared{Providers: map[string]string{"p": "openai"}}); err != nil {
		t.Errorf("Validate = %v, want nil", err)
	}
	if err := a.Validate(v1, Shared{}); err == nil {
		t.Error("Validate saw no providers and passed")
	}
	if sectionAt(t, "zz_test_a.inner").Validate != nil {
		t.Error("a section registered without checks has a Validate")
	}
	var keys []string
	for _, s := range Sections() {
		keys = append(keys, s.Key)
	}
	if i := strings.Index(strings.Join(keys, " "), "zz_test_a zz_test_a.inner"); i < 0 {
		t.Errorf("Sections = %v, want the outer section right before the inner", keys)
	}

	for _, tc := range []struct {
		name, want string
		reg        func()
	}{
		{"a key twice", `section "zz_test_a" registered twice`,
			func() { Register("zz_test_a", func() testB { return testB{} }, nil) }},
		{"a type twice", `type settings.testA registered for both "zz_test_a" and "zz_test_c"`,
			func() { Register("zz_test_c", func() testA { return testA{} }, nil) }},
		{"an upper-case key", `"Media" is not lower-case words`,
			func() { Register("Media", func() struct{ X int } { return struct{ X int }{} }, nil) }},
		{"an empty word", `"media..generation" is not lower-case words`,
			func() { Register("media..generation", func() struct{ Y int } { return struct{ Y int }{} }, nil) }},
		{"not a struct", `section "zz_test_d" is a int, not a struct`,
			func() { Register("zz_test_d", func() int { return 0 }, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if msg := mustPanic(t, tc.reg); !strings.Contains(msg, tc.want) {
				t.Errorf("panic %q, want it to say %q", msg, tc.want)
			}
		})
	}
}
