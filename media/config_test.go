package media_test

import (
	"testing"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/media"
)

// The media section's defaults that package mcp applies to zero options
// must be the same numbers, or `botd mcp` and `botd run` would disagree
// when the config leaves them out.
func TestDefaultsAgreeWithMCP(t *testing.T) {
	def := media.DefaultConfig()
	if def.InlineMaxBytes != mcp.DefaultInlineMaxBytes {
		t.Errorf("media.inline_max_bytes default %d, mcp's %d", def.InlineMaxBytes, mcp.DefaultInlineMaxBytes)
	}
	if def.LinkTTL.D() != mcp.DefaultLinkTTL {
		t.Errorf("media.link_ttl default %v, mcp's %v", def.LinkTTL.D(), mcp.DefaultLinkTTL)
	}
}

func TestDefaultConfigIsValid(t *testing.T) {
	if ps := settings.Of(media.DefaultConfig().Validate(nil)); len(ps) > 0 {
		t.Errorf("defaults are refused: %v", ps)
	}
}
