package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// slackDomains are the hosts (and their subdomains) Slack serves private
// files from; only they, and the configured api_url host, get the token.
var slackDomains = []string{"slack.com", "slack-gov.com"}

// errScope explains the usual cause of an HTML page where a file should be.
const errScope = "the bot token cannot read this file (add the files:read scope to the Slack app and reinstall it)"

// Download streams a file's bytes with the bot token. Files Slack withheld
// at receive time (file_access: check_file_info) are looked up with
// files.info first. The token is only ever sent to Slack's own hosts or the
// api_url host; any other URL is refused before a request is made.
func (s *Slack) Download(ctx context.Context, ref *mediaregistry.MediaReference) (io.ReadCloser, int64, error) {
	var p private
	if err := json.Unmarshal(ref.Private, &p); err != nil || (p.URL == "" && p.FileID == "") {
		return nil, 0, fmt.Errorf("slack: ref %s has no download handle: %w", ref.ID, channels.ErrUnavailable)
	}
	if p.URL == "" {
		u, err := s.resolveURL(ctx, p.FileID)
		if err != nil {
			return nil, 0, err
		}
		p.URL = u
	}
	if err := s.mayReceiveToken(p.URL); err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("slack: download %s: %w", ref.ID, err)
	}
	req.Header.Set("Authorization", "Bearer "+s.cfg.BotToken)
	resp, err := s.files.Do(req)
	if err != nil {
		// url.Error carries the URL, which holds no secret for Slack files.
		return nil, 0, fmt.Errorf("slack: download %s: %w", ref.ID, err)
	}
	if err := checkFileResponse(resp, req, ref.MIME); err != nil {
		_ = resp.Body.Close()
		return nil, 0, fmt.Errorf("slack: download %s: %w", ref.ID, err)
	}
	return resp.Body, resp.ContentLength, nil
}

func checkFileResponse(resp *http.Response, req *http.Request, wantMIME string) error {
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("HTTP %d: %s: %w", resp.StatusCode, errScope, channels.ErrForbidden)
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return fmt.Errorf("HTTP %d: %w", resp.StatusCode, channels.ErrUnavailable)
	default:
		return fmt.Errorf("unexpected HTTP status %d", resp.StatusCode)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	redirected := resp.Request != nil && resp.Request.URL.String() != req.URL.String()
	// Without files:read, files.slack.com answers with a redirect to the
	// workspace sign-in page and a 200 HTML page; a real HTML file is
	// served directly under its own MIME type.
	if ct == "text/html" && (redirected || mediaregistry.CleanMIME(wantMIME) != "text/html") {
		return fmt.Errorf("got a sign-in page instead of the file: %s: %w", errScope, channels.ErrForbidden)
	}
	return nil
}

// resolveURL asks files.info for a file's private URL.
func (s *Slack) resolveURL(ctx context.Context, fileID string) (string, error) {
	f, _, _, err := s.api.GetFileInfoContext(ctx, fileID, 1, 1)
	if err != nil {
		var se slackapi.SlackErrorResponse
		if errors.As(err, &se) {
			switch se.Err {
			case "file_not_found", "file_deleted":
				return "", fmt.Errorf("slack: files.info %s: %s: %w", fileID, se.Err, channels.ErrUnavailable)
			case "missing_scope", "not_allowed_token_type", "access_denied", "no_permission":
				return "", fmt.Errorf("slack: files.info %s: %s (the bot needs the files:read scope): %w", fileID, se.Err, channels.ErrForbidden)
			}
		}
		return "", fmt.Errorf("slack: files.info %s: %w", fileID, err)
	}
	if f.IsExternal {
		return "", fmt.Errorf("slack: file %s is stored outside Slack: %w", fileID, channels.ErrForbidden)
	}
	if f.URLPrivateDownload != "" {
		return f.URLPrivateDownload, nil
	}
	if f.URLPrivate != "" {
		return f.URLPrivate, nil
	}
	return "", fmt.Errorf("slack: files.info %s returned no private URL: %w", fileID, channels.ErrUnavailable)
}

// mayReceiveToken allows https Slack hosts and the exact scheme and host of
// api_url (a local fake or proxy); everything else is refused.
func (s *Slack) mayReceiveToken(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("slack: bad file URL: %w", channels.ErrForbidden)
	}
	if u.Scheme == "https" && u.User == nil {
		host := strings.ToLower(u.Hostname())
		for _, d := range slackDomains {
			if host == d || strings.HasSuffix(host, "."+d) {
				return nil
			}
		}
	}
	if u.Scheme == s.apiURL.Scheme && strings.EqualFold(u.Host, s.apiURL.Host) && u.User == nil {
		return nil
	}
	// Only the host is named: the rest of a URL may be sensitive.
	return fmt.Errorf("slack: refusing to send the bot token to %s (not a Slack host or the api_url host): %w", u.Host, channels.ErrForbidden)
}

// checkRedirect follows redirects only within hosts that may receive the
// token (Go would drop the header on a foreign host anyway; botd does not
// go there at all).
func (s *Slack) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	if err := s.mayReceiveToken(req.URL.String()); err != nil {
		return fmt.Errorf("file URL redirected off Slack: %w", err)
	}
	return nil
}
