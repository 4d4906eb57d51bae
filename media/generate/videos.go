package generate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/botd-dev/botd/llm"
)

// openAIVideos is OpenAI's Videos API: POST /videos submits a job, GET
// /videos/{id} tells its status (queued, in_progress, completed, failed),
// GET /videos/{id}/content streams the MP4, DELETE /videos/{id} removes it.
type openAIVideos struct{ o Options }

// videoObject is the job as the API renders it.
type videoObject struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Progress int    `json:"progress"`
	Seconds  string `json:"seconds"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (v videoObject) job(o *Options) Job {
	j := Job{ID: v.ID, State: JobState(v.Status), Progress: v.Progress}
	j.Seconds, _ = strconv.Atoi(v.Seconds)
	if v.Status == string(JobFailed) {
		e := &llm.Error{Kind: llm.KindUnknown, Message: "the video job failed"}
		if v.Error != nil {
			e.Code, e.Message = v.Error.Code, oneLine(v.Error.Message, 300)
			switch v.Error.Code {
			case "moderation_blocked", "content_policy_violation", "content_filter":
				e.Kind = llm.KindContentFilter
			}
		}
		j.Err = fail(o, e)
	}
	return j
}

func (c *openAIVideos) Submit(ctx context.Context, r VideoRequest) (Job, error) {
	body := map[string]any{"model": c.o.Model, "prompt": r.Prompt}
	if r.Seconds > 0 {
		// The API takes the duration as a string enum ("4", "8", "12").
		body["seconds"] = strconv.Itoa(r.Seconds)
	}
	if r.Size != "" {
		body["size"] = r.Size
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, joinURL(c.o.BaseURL, "/videos"), bytes.NewReader(b))
	if err != nil {
		return Job{}, fail(&c.o, llm.Errorf(c.o.Name, llm.KindBadRequest, err, "build request: %v", err))
	}
	req.Header.Set("Content-Type", "application/json")
	return c.object(req)
}

func (c *openAIVideos) Status(ctx context.Context, id string) (Job, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, joinURL(c.o.BaseURL, "/videos/"+url.PathEscape(id)), nil)
	if err != nil {
		return Job{}, fail(&c.o, llm.Errorf(c.o.Name, llm.KindBadRequest, err, "build request: %v", err))
	}
	return c.object(req)
}

func (c *openAIVideos) object(req *http.Request) (Job, error) {
	authorize(&c.o, req.Header)
	req.Header.Set("Accept", "application/json")
	resp, err := call(&c.o, req)
	if err != nil {
		return Job{}, notFound(err)
	}
	defer resp.Body.Close()
	b, err := readAll(&c.o, resp.Body, 1<<20)
	if err != nil {
		return Job{}, err
	}
	var v videoObject
	if err := json.Unmarshal(b, &v); err != nil || v.ID == "" {
		return Job{}, fail(&c.o, llm.NewError(c.o.Name, llm.KindUnknown, "the answer is not a video job: "+snippet(b, resp.StatusCode)))
	}
	return v.job(&c.o), nil
}

func (c *openAIVideos) Content(ctx context.Context, id string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, joinURL(c.o.BaseURL, "/videos/"+url.PathEscape(id)+"/content"), nil)
	if err != nil {
		return nil, fail(&c.o, llm.Errorf(c.o.Name, llm.KindBadRequest, err, "build request: %v", err))
	}
	authorize(&c.o, req.Header)
	resp, err := call(&c.o, req)
	if err != nil {
		return nil, notFound(err)
	}
	return resp.Body, nil
}

func (c *openAIVideos) Cancel(ctx context.Context, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, joinURL(c.o.BaseURL, "/videos/"+url.PathEscape(id)), nil)
	if err != nil {
		return fail(&c.o, llm.Errorf(c.o.Name, llm.KindBadRequest, err, "build request: %v", err))
	}
	authorize(&c.o, req.Header)
	resp, err := call(&c.o, req)
	if err != nil {
		return notFound(err)
	}
	resp.Body.Close()
	return nil
}

// notFound marks a 404 on a job with ErrNotFound: the provider deleted
// it (or its assets expired), which no poll will change.
func notFound(err error) error {
	if e, ok := err.(*llm.Error); ok && e.Status == http.StatusNotFound {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}
