package main

import (
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/media/links"
	"github.com/botd-dev/botd/webfetch"
	"github.com/botd-dev/botd/websearch"
)

// internetTools says which web tools the config turns on; every MCP face
// and the agent's prompt offer exactly these.
func internetTools(cfg *config.Config) mcp.InternetTools {
	inet := config.Section[links.Config](cfg)
	return mcp.InternetTools{Fetch: inet.Fetch.Enabled, Search: inet.Search.Enabled()}
}

// web builds fetch_url's fetcher and web_search's provider (nil when
// off); nothing connects until a tool asks.
func (d *daemon) web() (*webfetch.Fetcher, websearch.Searcher, error) {
	inet := config.Section[links.Config](d.cfg)
	var f *webfetch.Fetcher
	if inet.Fetch.Enabled {
		var err error
		f, err = webfetch.New(inet.Fetch, webfetch.Options{UserAgent: "botd/" + version + " (+https://github.com/botd-dev/botd)",
			Log: d.log.With("component", "web")})
		if err != nil {
			return nil, nil, fail(1, "internet.fetch: %v", err)
		}
	}
	var s websearch.Searcher
	if inet.Search.Enabled() {
		var err error
		if s, err = websearch.New(inet.Search, nil); err != nil {
			return nil, nil, fail(1, "internet.search: %v", err)
		}
	}
	return f, s, nil
}
