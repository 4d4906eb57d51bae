package config

// The components register their sections from their own packages
// (settings.Register in an init); botd links them in cmd/botd, these
// tests here. config itself imports none of them.
import (
	_ "github.com/botd-dev/botd/access"
	_ "github.com/botd-dev/botd/agent"
	_ "github.com/botd-dev/botd/mcp"
	_ "github.com/botd-dev/botd/media"
	_ "github.com/botd-dev/botd/media/generation"
	_ "github.com/botd-dev/botd/media/links"
	_ "github.com/botd-dev/botd/ops"
	_ "github.com/botd-dev/botd/scheduler"
	_ "github.com/botd-dev/botd/store"
)
