package mcp

import (
	"path/filepath"
	"regexp"
	"strings"
)

// Errors are written for the log: they name host paths, provider base
// URLs (a Telegram file URL even carries the bot token) and addresses. What
// the model reads is shown to chat members and can be steered by them, so
// an error becomes model-visible text only through ForModel; the log keeps
// the full error.

var (
	// urlOp is how net/http's *url.Error reads: `Post "https://…": cause`.
	urlOp = regexp.MustCompile(`\b([A-Z][a-z]+|[A-Z]+) "(?:https?|wss?)://[^"]*": `)
	// anyURL is a URL written anywhere else.
	anyURL = regexp.MustCompile(`\b(?:https?|wss?)://[^\s"'<>]+`)
	// dialAddr and lookupHost are the address a connection went to.
	dialAddr   = regexp.MustCompile(`\bdial (tcp|tcp4|tcp6|udp|unix) [^\s]+?: `)
	lookupHost = regexp.MustCompile(`\blookup [^\s:]+(?: on [^\s]+)?: `)
	// absPath is an absolute path, after the start, a space, a quote, a
	// bracket or "=".
	absPath = regexp.MustCompile(`(^|[\s"'(\[=])(/[^\s"'()\[\]<>:;,]+)`)
)

// ForModel rewrites an error message for the model: a path inside the group
// folder becomes group-relative (the model uses those), any other absolute
// path "(a host path)", a URL "the provider", and the address a connection
// was dialled or looked up is left out. groupDir may be empty.
func ForModel(msg, groupDir string) string {
	msg = urlOp.ReplaceAllString(msg, "$1 to the provider: ")
	msg = anyURL.ReplaceAllString(msg, "the provider")
	msg = dialAddr.ReplaceAllString(msg, "dial $1: ")
	msg = lookupHost.ReplaceAllString(msg, "lookup: ")
	root := ""
	if groupDir != "" {
		if abs, err := filepath.Abs(groupDir); err == nil {
			root = filepath.ToSlash(abs)
		}
	}
	return absPath.ReplaceAllStringFunc(msg, func(m string) string {
		i := strings.IndexByte(m, '/')
		lead, p := m[:i], m[i:]
		if root != "" {
			if rel, ok := strings.CutPrefix(p, root+"/"); ok && rel != "" {
				return lead + rel
			}
		}
		return lead + "(a host path)"
	})
}

// ModelError is ForModel of err's message.
func ModelError(err error, groupDir string) string {
	if err == nil {
		return ""
	}
	return ForModel(err.Error(), groupDir)
}
