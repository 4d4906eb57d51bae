package openai

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// apiError is {"message","type","param","code"}; compatible servers also
// send a bare string or a numeric code, hence the RawMessage.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// decodeError accepts {"error": {...}} and {"error": "text"}.
func decodeError(raw json.RawMessage) (*apiError, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	var a apiError
	if err := json.Unmarshal(raw, &a); err == nil {
		return &a, true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return &apiError{Message: s}, true
	}
	return nil, false
}

func (a *apiError) code() (string, int) {
	var s string
	if json.Unmarshal(a.Code, &s) == nil {
		return s, 0
	}
	// OpenRouter puts an HTTP status in code for errors inside a stream.
	if n, err := strconv.Atoi(string(a.Code)); err == nil {
		return "", n
	}
	return "", 0
}

func (a *apiError) toError(status int) *llm.Error {
	code, codeStatus := a.code()
	if status == 0 {
		status = codeStatus
	}
	kind := llm.KindForStatus(status)
	retryable := kind.Retryable()
	label := code
	if label == "" {
		label = a.Type
	}
	switch label {
	case "insufficient_quota", "billing_hard_limit_reached":
		// A 429, but no amount of waiting refills the account.
		kind, retryable = llm.KindRateLimit, false
	case "rate_limit_exceeded", "requests", "tokens":
		kind, retryable = llm.KindRateLimit, true
	case "invalid_api_key", "authentication_error", "permission_denied":
		kind, retryable = llm.KindAuth, false
	case "content_filter", "content_policy_violation", "moderation_blocked", "image_generation_user_error":
		// The Images and Videos APIs refuse what they will not make with a
		// 400 and one of these codes.
		kind, retryable = llm.KindContentFilter, false
	case "context_length_exceeded", "invalid_request_error", "model_not_found":
		if status == 0 || status == http.StatusBadRequest || status == http.StatusNotFound {
			kind, retryable = llm.KindBadRequest, false
		}
	case "server_error", "internal_error":
		// The HTTP status (503 overloaded, 504 timeout) says more; this only
		// decides errors that arrive inside a 200 stream.
		if status == 0 {
			kind, retryable = llm.KindTransport, true
		}
	case "overloaded", "server_overloaded", "engine_overloaded":
		kind, retryable = llm.KindOverloaded, true
	case "batch_expired":
		// A batch item the completion window ran out on: submitting it
		// again may well succeed.
		kind, retryable = llm.KindTimeout, true
	case "batch_cancelled":
		kind, retryable = llm.KindCancelled, false
	}
	return &llm.Error{Kind: kind, Retryable: retryable, Status: status, Code: label, Message: a.Message}
}

// parseError reads {"error": {...}} and {"error": "text"}, and, from
// compatible servers, FastAPI's {"detail": …} (speaches,
// faster-whisper-server) and a bare {"message"}. It is the one classifier
// of every endpoint: chat, files, batches, audio, images, videos.
func parseError(status int, h http.Header, body []byte) *llm.Error {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Detail  json.RawMessage `json:"detail"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &env) != nil {
		return wire.StatusError(status, h, "", wire.ErrorText(body))
	}
	a, ok := decodeError(env.Error)
	if !ok || a.Message == "" && a.Type == "" && len(a.Code) == 0 {
		var s string
		switch {
		case json.Unmarshal(env.Detail, &s) == nil && s != "":
			a = &apiError{Message: s}
		case len(env.Detail) > 0 && string(env.Detail) != "null":
			a = &apiError{Message: wire.Snippet(env.Detail)}
		case env.Message != "":
			a = &apiError{Message: env.Message}
		default:
			return wire.StatusError(status, h, "", wire.ErrorText(body))
		}
	}
	e := a.toError(status)
	if e.Kind == llm.KindBadRequest && strings.Contains(strings.ToLower(e.Message), "safety system") {
		// The Images API words some refusals only in its message.
		e.Kind = llm.KindContentFilter
	}
	if h != nil {
		e.RetryAfter = llm.ParseRetryAfter(h)
	}
	return e
}
