package transcribe

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/botd-dev/botd/llm"
)

// explain rewrites a vendor's refusal of an upload (an *llm.Error with an
// HTTP status) into a message that says what to do about it, naming the
// config keys of transcription. The vendor's own text follows the advice:
// it is often the most specific part. Anything else passes unchanged.
func (t *Transcriber) explain(err error, a audio) error {
	var e *llm.Error
	if !errors.As(err, &e) || e.Status < 300 {
		return err
	}
	status := e.Status
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
	}
	e.Message = llm.Scrub(e.Message, t.o.APIKey)
	return e
}
