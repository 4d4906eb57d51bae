package web

import (
	"strings"
	"testing"
)

// The render cache keeps the most recently shown answers within its
// bytes, and never one so large it would empty it.
func TestRenderCache(t *testing.T) {
	c := newRenderCache(100)
	c.put("a", strings.Repeat("A", 10))
	c.put("b", strings.Repeat("B", 10))
	if h, ok := c.get("a"); !ok || h != strings.Repeat("A", 10) {
		t.Fatalf("a: %q %v", h, ok)
	}
	c.put("huge", strings.Repeat("H", 50)) // over max/8: not kept
	if _, ok := c.get("huge"); ok {
		t.Error("an answer over an eighth of the cache was kept")
	}
	for i := range 9 {
		c.put(string(rune('c'+i)), strings.Repeat("x", 10))
	}
	// 11 entries of 10 bytes in 100: the least recently used, b, went.
	if _, ok := c.get("b"); ok {
		t.Error("b was kept past the cache's bytes")
	}
	if _, ok := c.get("a"); !ok {
		t.Error("a, used since, was dropped")
	}
	if c.size > 100 {
		t.Errorf("cache holds %d bytes, max 100", c.size)
	}
}
