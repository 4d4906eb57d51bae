package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/bwmarrin/discordgo"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// handle is what a ref's Private holds: where the attachment lives. The
// CDN link in a message expires within a day, so only its address without
// the signature is kept, and a fetch asks Discord for a fresh one. Never
// the token.
type handle struct {
	Channel    string `json:"c"`
	Message    string `json:"m"`
	Attachment string `json:"a"`
	URL        string `json:"u,omitempty"`
}

func encodeHandle(h handle) []byte {
	b, _ := json.Marshal(h) // a struct of strings always marshals
	return b
}

func decodeHandle(p []byte) handle {
	var h handle
	_ = json.Unmarshal(p, &h)
	return h
}

// stripQuery drops a CDN link's signature (ex, is, hm): it expires, and
// the refresh endpoint signs the bare address anew.
func stripQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	u.RawQuery, u.Fragment, u.ForceQuery = "", "", false
	return u.String()
}

// Download implements channels.Downloader: a fresh signed link first
// (POST /attachments/refresh-urls, or the message read again where that
// fails), then one streamed GET from the CDN without credentials. Nothing
// is fetched before this is called; sizes are the media service's
// business.
func (d *Discord) Download(ctx context.Context, ref *mediaregistry.MediaReference) (io.ReadCloser, int64, error) {
	h := decodeHandle(ref.Private)
	if h.Channel == "" || h.Message == "" || h.Attachment == "" {
		return nil, 0, fmt.Errorf("discord download %s: the ref names no attachment: %w", ref.ID, channels.ErrUnavailable)
	}
	link, err := d.freshLink(ctx, h)
	if err != nil {
		return nil, 0, fmt.Errorf("discord download %s: %w", ref.ID, err)
	}
	body, size, err := d.fetch(ctx, link)
	if err != nil {
		return nil, 0, fmt.Errorf("discord download %s: %w", ref.ID, err)
	}
	return body, size, nil
}

// freshLink asks Discord to sign the attachment's address anew; when the
// endpoint fails or does not know the link, the message is read again,
// which also tells a deleted message or attachment from a live one.
func (d *Discord) freshLink(ctx context.Context, h handle) (string, error) {
	if h.URL != "" {
		link, err := d.refreshURL(ctx, h.URL)
		if err == nil && link != "" {
			return link, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		d.log.Debug("discord: attachment link refresh failed; reading the message again", "message", h.Message, "err", err)
	}
	m, err := d.s.ChannelMessage(h.Channel, h.Message, discordgo.WithContext(ctx))
	if err != nil {
		return "", restError("reading the message for a fresh link", err)
	}
	for _, a := range m.Attachments {
		if a != nil && a.ID == h.Attachment {
			if a.URL == "" {
				break
			}
			return a.URL, nil
		}
	}
	return "", fmt.Errorf("the attachment was removed from its message: %w", channels.ErrUnavailable)
}

var refreshEndpoint = discordgo.EndpointAPI + "attachments/refresh-urls"

func (d *Discord) refreshURL(ctx context.Context, link string) (string, error) {
	body := struct {
		URLs []string `json:"attachment_urls"`
	}{URLs: []string{link}}
	raw, err := d.s.RequestWithBucketID(http.MethodPost, refreshEndpoint, body, refreshEndpoint, discordgo.WithContext(ctx))
	if err != nil {
		return "", restError("refresh-urls", err)
	}
	var out struct {
		Refreshed []struct {
			Original  string `json:"original"`
			Refreshed string `json:"refreshed"`
		} `json:"refreshed_urls"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", fmt.Errorf("refresh-urls: %w", err)
	}
	for _, r := range out.Refreshed {
		if r.Refreshed != "" && stripQuery(r.Original) == stripQuery(link) {
			return r.Refreshed, nil
		}
	}
	return "", errors.New("refresh-urls returned no link for the attachment")
}

// restError wraps a REST failure with the channels error it means.
func restError(what string, err error) error {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		switch re.Response.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%s: %w: %w", what, err, channels.ErrUnavailable)
		case http.StatusForbidden, http.StatusUnauthorized:
			return fmt.Errorf("%s: %w: %w", what, err, channels.ErrForbidden)
		case http.StatusRequestEntityTooLarge:
			return fmt.Errorf("%s: %w: %w", what, err, channels.ErrTooLarge)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// fetch GETs a signed CDN link. Errors never contain the link (its
// signature is a bearer credential for a day).
func (d *Discord) fetch(ctx context.Context, link string) (io.ReadCloser, int64, error) {
	u, err := url.Parse(link)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, 0, fmt.Errorf("discord returned a link that is not http(s): %w", channels.ErrUnavailable)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, fmt.Errorf("cdn request: %w", err)
	}
	resp, err := d.files.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, 0, fmt.Errorf("cdn get %s%s: %w", u.Host, u.Path, err)
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		what := fmt.Sprintf("cdn get %s%s: HTTP %d", u.Host, u.Path, resp.StatusCode)
		switch resp.StatusCode {
		case http.StatusNotFound, http.StatusGone:
			return nil, 0, fmt.Errorf("%s: %w", what, channels.ErrUnavailable)
		case http.StatusForbidden, http.StatusUnauthorized:
			return nil, 0, fmt.Errorf("%s: %w", what, channels.ErrForbidden)
		}
		return nil, 0, errors.New(what)
	}
	// The media service's cache stops a stream that runs past its limit.
	return resp.Body, resp.ContentLength, nil
}
