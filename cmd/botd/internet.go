package main

import (
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/webfetch"
	"github.com/botd-dev/botd/websearch"
)

// internetTools says which web tools the config turns on; every MCP face
// and the agent's prompt offer exactly these.
func internetTools(cfg *config.Config) mcp.InternetTools {
	return mcp.InternetTools{Fetch: cfg.Internet.Fetch.Enabled, Search: cfg.Internet.Search.Enabled()}
}

// web builds fetch_url's fetcher and web_search's provider (nil when
// off); nothing connects until a tool asks.
func (d *daemon) web() (*webfetch.Fetcher, websearch.Searcher, error) {
	var f *webfetch.Fetcher
	if d.cfg.Internet.Fetch.Enabled {
		var err error
		f, err = webfetch.New(d.cfg.Internet.Fetch, webfetch.Options{UserAgent: "botd/" + version + " (+https://github.com/botd-dev/botd)",
			Log: d.log.With("component", "web")})
		if err != nil {
			return nil, nil, fail(1, "internet.fetch: %v", err)
		}
	}
	var s websearch.Searcher
	if d.cfg.Internet.Search.Enabled() {
		var err error
		if s, err = websearch.New(d.cfg.Internet.Search, nil); err != nil {
			return nil, nil, fail(1, "internet.search: %v", err)
		}
	}
	return f, s, nil
}
