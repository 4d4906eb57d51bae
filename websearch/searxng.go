package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/botd-dev/botd/internal/textclip"
)

// searxng searches through a SearXNG instance's JSON API.
type searxng struct{ *httpClient }

func (s *searxng) Provider() string { return SearXNG }

// who names the instance in sentences the operator acts on.
func (s *searxng) who() string { return "searxng at " + s.base.Host }

func (s *searxng) Search(ctx context.Context, query string, count int) ([]Result, error) {
	q, err := checkQuery(query)
	if err != nil {
		return nil, err
	}
	count = clampCount(count)
	u := *s.base
	// An operator who pasted the search page's address means the same
	// instance.
	if p := strings.TrimRight(u.Path, "/"); strings.HasSuffix(p, "/search") {
		u.Path, u.RawPath = p, ""
	} else {
		u = *u.JoinPath("search")
	}
	v := u.Query()
	v.Set("q", q)
	v.Set("format", "json")
	u.RawQuery = v.Encode()
	resp, err := s.get(ctx, s.who(), &u, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusForbidden:
		// What SearXNG answers when format=json is not among its
		// search.formats, as on every public instance.
		errorBody(resp)
		return nil, fmt.Errorf("%w: %s refused its JSON API (403 Forbidden): add json to search.formats in its settings.yml and restart it", ErrFailed, s.who())
	case resp.StatusCode/100 != 2:
		errorBody(resp)
		return nil, fmt.Errorf("%w: %s", ErrFailed, statusSentence(resp))
	}
	c := newCleaner(count)
	var unresponsiveEngines []json.RawMessage
	err = streamResults(resp, s.who(), []string{"results"}, func(raw json.RawMessage) bool {
		// One malformed result costs itself, not the search.
		var r struct {
			URL       looseString `json:"url"`
			Title     looseString `json:"title"`
			Content   looseString `json:"content"`
			Published looseString `json:"publishedDate"`
		}
		if json.Unmarshal(raw, &r) == nil {
			c.add(string(r.Title), string(r.URL), string(r.Content), string(r.Published))
		}
		return !c.full()
	}, func(key string, raw json.RawMessage) {
		if key == "unresponsive_engines" {
			_ = json.Unmarshal(raw, &unresponsiveEngines)
		}
	})
	if err != nil {
		return nil, err
	}
	if len(c.out) == 0 && len(unresponsiveEngines) > 0 {
		return nil, fmt.Errorf("%w: %s found nothing because its engines did not answer (%s)", ErrFailed, s.who(), unresponsive(unresponsiveEngines))
	}
	return c.out, nil
}

// unresponsive names the engines SearXNG lists as [name, reason] pairs.
func unresponsive(engines []json.RawMessage) string {
	var parts []string
	for _, raw := range engines {
		var e []looseString
		if json.Unmarshal(raw, &e) != nil || len(e) == 0 || e[0] == "" {
			continue
		}
		p := string(e[0])
		if len(e) > 1 && e[1] != "" {
			p += ": " + string(e[1])
		}
		parts = append(parts, p)
		if len(parts) == 5 {
			break
		}
	}
	return textclip.OneLine(strings.Join(parts, "; "), 300)
}
