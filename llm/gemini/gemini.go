// Package gemini adapts the Gemini API (generativelanguage) to the llm seam.
// Gemini differs most from the other two: no tool-call ids, a restricted
// schema dialect, signatures on arbitrary parts, and cumulative usage.
package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// DefaultBaseURL is the public API, without the version path.
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// Option configures a Provider; the options are llm/providers' With*.
type Option = wire.Option

// adapter names the embedded wire.Adapter so that the field stays
// unexported while its llm.Provider methods are promoted.
type adapter = wire.Adapter

// Provider is the Gemini adapter.
type Provider struct{ adapter }

var _ llm.Provider = (*Provider)(nil)

// New returns an adapter. It does no I/O. An empty baseURL means the public
// API; a nil hc means http.DefaultClient.
func New(apiKey, baseURL string, hc *http.Client, opts ...Option) *Provider {
	p := &Provider{}
	p.adapter = wire.NewAdapter("gemini", apiKey, baseURL, DefaultBaseURL, hc, parseError, p.open, opts)
	return p
}

func (p *Provider) open(ctx context.Context, req *llm.Request, keepRaw bool) (llm.Stream, error) {
	body, err := buildRequest(p.Name(), withFileURIs(req, p.Client.RemoteFiles(ctx, p, req)))
	if err != nil {
		return nil, err
	}
	h := p.header()
	model := strings.TrimPrefix(req.Model, "models/")
	return p.Client.Stream(ctx, wire.Call{
		URL:     wire.JoinURL(p.BaseURL, "/v1beta/models/"+url.PathEscape(model)+":streamGenerateContent?alt=sse"),
		Header:  h,
		Body:    body,
		Model:   req.Model,
		Decoder: &decoder{},
		KeepRaw: keepRaw,
	})
}

// apiError is google.rpc.Status as the REST API renders it.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Reason string `json:"reason"`
	} `json:"details"`
}

func (a *apiError) toError(status int) *llm.Error {
	if status == 0 {
		status = a.Code
	}
	kind := llm.KindForStatus(status)
	switch a.Status {
	case "RESOURCE_EXHAUSTED":
		kind = llm.KindRateLimit
	case "UNAVAILABLE":
		kind = llm.KindOverloaded
	case "DEADLINE_EXCEEDED":
		kind = llm.KindTimeout
	case "INTERNAL":
		kind = llm.KindTransport
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		kind = llm.KindAuth
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "NOT_FOUND", "OUT_OF_RANGE":
		kind = llm.KindBadRequest
	}
	for _, d := range a.Details {
		// A bad key is reported as 400 INVALID_ARGUMENT.
		if d.Reason == "API_KEY_INVALID" || d.Reason == "API_KEY_EXPIRED" {
			kind = llm.KindAuth
		}
	}
	return &llm.Error{Kind: kind, Retryable: kind.Retryable(), Status: status, Code: a.Status, Message: a.Message}
}

// parseError accepts {"error":{...}} and, as some endpoints send, a
// one-element array of it.
func parseError(status int, h http.Header, body []byte) *llm.Error {
	type env struct {
		Error *apiError `json:"error"`
	}
	var e env
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil {
		var arr []env
		if err := json.Unmarshal(body, &arr); err != nil || len(arr) == 0 || arr[0].Error == nil {
			return wire.StatusError(status, h, "", wire.ErrorText(body))
		}
		e = arr[0]
	}
	out := e.Error.toError(status)
	out.RetryAfter = llm.ParseRetryAfter(h)
	return out
}
