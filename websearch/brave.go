package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/botd-dev/botd/internal/textclip"
)

// brave searches through the Brave Search API's web search.
type brave struct {
	*httpClient
	key string
}

func (b *brave) Provider() string { return Brave }

const braveWho = "Brave Search"

func (b *brave) Search(ctx context.Context, query string, count int) ([]Result, error) {
	q, err := checkQuery(query)
	if err != nil {
		return nil, err
	}
	count = clampCount(count)
	u := b.base.JoinPath("res/v1/web/search")
	v := u.Query()
	v.Set("q", q)
	v.Set("count", strconv.Itoa(count))
	u.RawQuery = v.Encode()
	resp, err := b.get(ctx, braveWho, u, http.Header{"X-Subscription-Token": {b.key}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, braveError(resp)
	}
	c := newCleaner(count)
	err = streamResults(resp, braveWho, []string{"web", "results"}, func(raw json.RawMessage) bool {
		// One malformed result costs itself, not the search.
		var r struct {
			Title       looseString `json:"title"`
			URL         looseString `json:"url"`
			Description looseString `json:"description"`
			Age         looseString `json:"age"`
			PageAge     looseString `json:"page_age"`
		}
		if json.Unmarshal(raw, &r) == nil {
			published := r.Age
			if published == "" {
				published = r.PageAge
			}
			c.add(string(r.Title), string(r.URL), string(r.Description), string(published))
		}
		return !c.full()
	}, nil)
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// braveError is the sentence for a failed answer, from Brave's own error
// code where it gives one: {"type":"ErrorResponse","error":{"code",
// "detail",...}}.
func braveError(resp *http.Response) error {
	var e struct {
		Error struct {
			Code   looseString `json:"code"`
			Detail looseString `json:"detail"`
		} `json:"error"`
	}
	_ = json.Unmarshal(errorBody(resp), &e)
	switch e.Error.Code {
	case "SUBSCRIPTION_TOKEN_INVALID":
		return fmt.Errorf("%w: Brave Search refused the API key (%s): check internet.search.api_key", ErrFailed, resp.Status)
	case "RATE_LIMITED":
		return fmt.Errorf("%w: %s: Brave Search's rate limit or monthly quota is used up", ErrFailed, statusSentence(resp))
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: Brave Search refused the API key (%s): check internet.search.api_key", ErrFailed, resp.Status)
	}
	if d := textclip.OneLine(string(e.Error.Detail), 200); d != "" {
		return fmt.Errorf("%w: %s: %s", ErrFailed, statusSentence(resp), d)
	}
	return fmt.Errorf("%w: %s", ErrFailed, statusSentence(resp))
}
