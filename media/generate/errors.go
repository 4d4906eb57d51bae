package generate

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/gemini"
)

// explain words a vendor's failure for media.generation: what to check,
// naming the config keys; the vendor's own text follows the advice.
func (o *Options) explain(err error) error {
	var e *llm.Error
	if !errors.As(err, &e) {
		return err
	}
	switch {
	case e.Code == "insufficient_quota" || e.Code == "billing_hard_limit_reached":
		e.Message = fmt.Sprintf("%s refuses more work: the account's quota or billing limit is used up; %s", o.Name, e.Message)
	case e.Kind == llm.KindAuth:
		e.Message = fmt.Sprintf("%s rejected the request: check llm.providers.%s.api_key; %s", o.Name, o.Name, e.Message)
	case e.Status == http.StatusNotFound && e.Code == "":
		e.Message = fmt.Sprintf("%s has no such endpoint or model %q at %s: check llm.providers.%s.base_url and the model in media.generation; %s",
			o.Name, o.Model, o.BaseURL, o.Name, e.Message)
	case e.Code == gemini.NoImage:
		e.Message += "; check that media.generation.image.model makes images"
	}
	e.Message = llm.Scrub(e.Message, o.APIKey)
	return e
}
