package transcribe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/botd-dev/botd/llm"
)

// classify turns a failed answer into an *llm.Error of the seam's kinds
// whose message says what to do about it. The vendor's own text follows the
// advice: it is often the most specific part.
func (t *Transcriber) classify(status int, h http.Header, body []byte, a audio) *llm.Error {
	var e *llm.Error
	if t.o.Type == "gemini" {
		e = geminiError(status, body)
	} else {
		e = openaiError(status, body)
	}
	e.RetryAfter = llm.ParseRetryAfter(h)
	vendor := e.Message
	if vendor == "" {
		vendor = http.StatusText(status)
	}
	n := t.o.Name
	switch {
	case status == http.StatusRequestEntityTooLarge:
		e.Kind, e.Retryable, e.Err = llm.KindBadRequest, false, ErrTooLarge
		e.Message = fmt.Sprintf("%s refused %s (%d bytes) as too large; %s", n, describe(a.name, a.mime), a.size, vendor)
	case e.Kind == llm.KindAuth:
		e.Message = fmt.Sprintf("%s rejected the request: check the api key of provider %s (llm.providers.%s.api_key); %s", n, n, n, vendor)
	case e.Kind == llm.KindRateLimit && !e.Retryable:
		e.Message = fmt.Sprintf("%s refuses more work: the account's quota or billing limit is used up; %s", n, vendor)
	case e.Kind == llm.KindRateLimit:
		e.Message = fmt.Sprintf("%s is rate limiting transcriptions, try again later; %s", n, vendor)
	case status == http.StatusNotFound:
		e.Message = fmt.Sprintf("%s has no transcription endpoint or no model %q at %s: check llm.providers.%s.base_url and media.transcription.model; %s",
			n, t.o.Model, t.o.BaseURL, n, vendor)
	default:
		e.Message = vendor
	}
	return e
}

// openaiError reads the error shapes of OpenAI-compatible servers:
// {"error": {"message","type","code"}}, {"error": "text"}, FastAPI's
// {"detail": …} (speaches, faster-whisper-server) and a bare {"message"}.
func openaiError(status int, body []byte) *llm.Error {
	kind := llm.KindForStatus(status)
	e := &llm.Error{Kind: kind, Retryable: kind.Retryable(), Status: status}
	var env struct {
		Error   json.RawMessage `json:"error"`
		Detail  json.RawMessage `json:"detail"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &env) != nil {
		e.Message = unparsed(status, body)
		return e
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	var s string
	switch {
	case json.Unmarshal(env.Error, &obj) == nil && obj.Message != "":
		e.Message = obj.Message
		if json.Unmarshal(obj.Code, &s) == nil && s != "" {
			e.Code = s
		} else {
			e.Code = obj.Type
		}
	case json.Unmarshal(env.Error, &s) == nil && s != "":
		e.Message = s
	case json.Unmarshal(env.Detail, &s) == nil && s != "":
		e.Message = s
	case len(env.Detail) > 0:
		e.Message = snippet(env.Detail)
	case env.Message != "":
		e.Message = env.Message
	default:
		e.Message = unparsed(status, body)
	}
	switch e.Code {
	case "insufficient_quota", "billing_hard_limit_reached":
		// A 429, but no amount of waiting refills the account.
		e.Kind, e.Retryable = llm.KindRateLimit, false
	case "invalid_api_key", "authentication_error", "permission_denied":
		e.Kind, e.Retryable = llm.KindAuth, false
	}
	return e
}

// geminiError reads google.rpc.Status as the REST API renders it, alone or
// in a one-element array.
func geminiError(status int, body []byte) *llm.Error {
	kind := llm.KindForStatus(status)
	e := &llm.Error{Kind: kind, Retryable: kind.Retryable(), Status: status}
	type rpcStatus struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Reason string `json:"reason"`
		} `json:"details"`
	}
	type env struct {
		Error *rpcStatus `json:"error"`
	}
	var one env
	if json.Unmarshal(body, &one) != nil || one.Error == nil {
		var arr []env
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 || arr[0].Error == nil {
			e.Message = unparsed(status, body)
			return e
		}
		one = arr[0]
	}
	r := one.Error
	e.Message, e.Code = r.Message, r.Status
	switch r.Status {
	case "RESOURCE_EXHAUSTED":
		e.Kind = llm.KindRateLimit
	case "UNAVAILABLE":
		e.Kind = llm.KindOverloaded
	case "DEADLINE_EXCEEDED":
		e.Kind = llm.KindTimeout
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		e.Kind = llm.KindAuth
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "NOT_FOUND", "OUT_OF_RANGE":
		e.Kind = llm.KindBadRequest
	}
	for _, d := range r.Details {
		// A bad key is reported as 400 INVALID_ARGUMENT.
		if d.Reason == "API_KEY_INVALID" || d.Reason == "API_KEY_EXPIRED" {
			e.Kind = llm.KindAuth
		}
	}
	e.Retryable = e.Kind.Retryable()
	return e
}

// unparsed describes an error answer that is not a vendor's JSON: a proxy
// page, or nothing at all.
func unparsed(status int, body []byte) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return http.StatusText(status)
	}
	return snippet(body)
}

// isFormatRefusal reports whether err is a server refusing
// response_format=verbose_json (OpenAI's gpt-4o-*-transcribe models and
// some compatible servers take json only).
func isFormatRefusal(err error) bool {
	e, ok := err.(*llm.Error)
	return ok && e.Kind == llm.KindBadRequest && e.Status != http.StatusRequestEntityTooLarge &&
		(strings.Contains(e.Message, "response_format") || strings.Contains(e.Message, "verbose_json"))
}

// seconds parses a duration in seconds given as a JSON number or string.
func seconds(n json.Number) (float64, bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil && f > 0
}
