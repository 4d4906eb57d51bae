package modelview

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
	// connIO is a read or write on an open connection, which net writes
	// with both ends: `write tcp 127.0.0.1:50312->127.0.0.1:8080: `.
	connIO = regexp.MustCompile(`\b(read|write|readfrom|writeto) (tcp|tcp4|tcp6|udp|udp4|udp6|unix) [^\s]*->[^\s]+?: `)
	// ipPort is any other IP address with a port, v4 or bracketed v6.
	ipPort = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}:\d{1,5}\b|\[[0-9A-Fa-f:.%]+\]:\d{1,5}\b`)
	// absPath is an absolute path, after the start, a space, a quote, a
	// bracket or "=".
	absPath = regexp.MustCompile(`(^|[\s"'(\[=])(/[^\s"'()\[\]<>:;,]+)`)
)

// ForModel rewrites an error message for the model: a path inside the group
// folder becomes group-relative (the model uses those), any other absolute
// path "(a host path)", a URL "the provider", and the address a connection
// was dialled, looked up, read or written is left out, and any other IP
// address with a port becomes "(an address)". groupDir may be empty.
func ForModel(msg, groupDir string) string {
	msg = urlOp.ReplaceAllString(msg, "$1 to the provider: ")
	msg = anyURL.ReplaceAllString(msg, "the provider")
	msg = dialAddr.ReplaceAllString(msg, "dial $1: ")
	msg = lookupHost.ReplaceAllString(msg, "lookup: ")
	msg = connIO.ReplaceAllString(msg, "$1 $2: ")
	msg = ipPort.ReplaceAllString(msg, "(an address)")
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
