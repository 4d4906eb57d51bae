package tools

// CodeRateLimited: the group used its share of something metered per
// hour (internet.fetch.per_group_per_hour); the message says when more is
// possible.
const CodeRateLimited = "rate_limited"

// FetchURLArgs asks for a web page (or any file at an http(s) address).
type FetchURLArgs struct {
	URL string `json:"url"`
}

// FetchURLResult is the fetched address saved like fetched media (its
// link ref, the group copy's path), plus what the web said of it.
type FetchURLResult struct {
	FetchMediaResult
	URL         string `json:"url"`                    // as asked for, canonical
	FinalURL    string `json:"final_url,omitempty"`    // after redirects, when it differs
	ContentType string `json:"content_type,omitempty"` // as the server sent it (charset kept)
}

// WebSearchArgs is one query to the configured search provider.
type WebSearchArgs struct {
	Query string `json:"query"`
	Count int    `json:"count,omitempty"`
}

// SearchResult is one hit: the page the agent may open with fetch_url.
type SearchResult struct {
	Title     string `json:"title"`
	URL       string `json:"url"`
	Snippet   string `json:"snippet,omitempty"`
	Published string `json:"published,omitempty"`
}

// WebSearchResult is a search's answer.
type WebSearchResult struct {
	Provider string         `json:"provider"`
	Results  []SearchResult `json:"results"`
}
