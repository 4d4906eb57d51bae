package mediaregistry

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/idna"
)

// ErrNotWebURL is an address botd does not fetch at all: not http(s),
// not absolute, or not parseable.
var ErrNotWebURL = errors.New("not an http(s) address")

// CanonicalURL is the one spelling of a web address that fetch_url keys
// its link ref, cache and note by, so "HTTPS://Example.com:443/a#top"
// and "https://example.com/a" are one page: scheme and host lower-case,
// an international host in its ASCII form, the default port and the
// fragment dropped, an empty path "/". It checks form only; whether botd
// may reach the address is the SSRF guard's to say.
func CanonicalURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") && !strings.Contains(raw, ":") && strings.Contains(strings.SplitN(raw, "/", 2)[0], ".") {
		// "example.com/a", as people (and models) write addresses.
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %q cannot be read as an address", ErrNotWebURL, clipURL(raw))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: only http and https addresses are fetched, not %q", ErrNotWebURL, clipURL(raw))
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, fmt.Errorf("%w: %q has no host", ErrNotWebURL, clipURL(raw))
	}
	host, port := u.Hostname(), u.Port()
	// Hostname drops an IPv6 literal's brackets; they come back below.
	if net.ParseIP(host) == nil {
		if a, err := idna.Lookup.ToASCII(host); err == nil && a != "" {
			host = a
		}
	}
	host = strings.ToLower(host)
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	return u, nil
}

func clipURL(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// urlRe finds web addresses in a chat message's text.
var urlRe = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"']+`)

// URLs are the web addresses in text, canonical, at most max, in the
// order they appear; trailing punctuation of the sentence is not part of
// an address.
func URLs(text string, max int) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range urlRe.FindAllString(text, -1) {
		m = strings.TrimRight(m, ".,;:!?)]}*_~")
		u, err := CanonicalURL(m)
		if err != nil {
			continue
		}
		if s := u.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
			if len(out) == max {
				break
			}
		}
	}
	return out
}
