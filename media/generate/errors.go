package generate

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/botd-dev/botd/llm"
)

// classify turns a failed answer into an *llm.Error whose message says
// what to do. OpenAI answers {"error": {"message", "type", "code"}},
// Gemini a google.rpc.Status under "error"; either may be a proxy's page.
func classify(o *Options, status int, body []byte) *llm.Error {
	kind := llm.KindForStatus(status)
	e := &llm.Error{Kind: kind, Status: status}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Status  string          `json:"status"`
	}
	if json.Unmarshal(body, &env) == nil && json.Unmarshal(env.Error, &obj) == nil && obj.Message != "" {
		e.Message = obj.Message
		var code string
		if json.Unmarshal(obj.Code, &code) != nil || code == "" {
			code = obj.Type
		}
		if obj.Status != "" {
			code = obj.Status
		}
		e.Code = code
	} else {
		e.Message = snippet(body, status)
	}
	switch e.Code {
	case "content_policy_violation", "moderation_blocked", "image_generation_user_error", "content_filter":
		// OpenAI refuses images (and videos) it will not make with a 400
		// and one of these codes.
		e.Kind = llm.KindContentFilter
	case "insufficient_quota", "billing_hard_limit_reached":
		e.Kind = llm.KindRateLimit
		e.Message = fmt.Sprintf("%s refuses more work: the account's quota or billing limit is used up; %s", o.Name, e.Message)
	case "invalid_api_key", "UNAUTHENTICATED", "PERMISSION_DENIED":
		e.Kind = llm.KindAuth
	case "RESOURCE_EXHAUSTED":
		e.Kind = llm.KindRateLimit
	case "UNAVAILABLE":
		e.Kind = llm.KindOverloaded
	}
	if e.Kind == llm.KindBadRequest && strings.Contains(strings.ToLower(e.Message), "safety system") {
		e.Kind = llm.KindContentFilter
	}
	switch {
	case e.Kind == llm.KindAuth:
		e.Message = fmt.Sprintf("%s rejected the request: check llm.providers.%s.api_key; %s", o.Name, o.Name, e.Message)
	case status == http.StatusNotFound && e.Code == "":
		e.Message = fmt.Sprintf("%s has no such endpoint or model %q at %s: check llm.providers.%s.base_url and the model in media.generation; %s",
			o.Name, o.Model, o.BaseURL, o.Name, e.Message)
	}
	e.Retryable = e.Kind.Retryable() && e.Code != "insufficient_quota" && e.Code != "billing_hard_limit_reached"
	return e
}

// snippet renders the start of an answer that is not a vendor's JSON.
func snippet(b []byte, status int) string {
	s := oneLine(string(b), 200)
	if s == "" {
		return http.StatusText(status)
	}
	return s
}
