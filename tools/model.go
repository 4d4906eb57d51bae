package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/botd-dev/botd/internal/textclip"
	"github.com/botd-dev/botd/mediaregistry"
)

// ModelHandler is the model's half of a tool: it turns the model's
// arguments into the request (or, for a Local tool, does the work) and the
// answer into what the model reads. A tool failure is a result (IsError).
// Every face runs it: the agent in process, the MCP servers for external
// clients.
type ModelHandler func(e Env, ctx context.Context, a Args) *Result

// Args are the model's arguments of one call, as JSON decodes them.
type Args = map[string]any

// Env is what a face gives a tool's ModelHandler: modelview's Session of
// one group implements it, for the agent and the MCP servers alike. A tool of the simple kind needs Call alone; the
// tools whose MCP half reads or changes the group folder, or renders
// files for the model, are the server's own methods, named by their Spec
// as method expressions (MCP: Env.FetchMedia).
type Env interface {
	// Call sends one IPC request to the host under the call timeout and
	// decodes its result.
	Call(ctx context.Context, typ string, args, result any) error
	// CallLong is Call under the generation timeout, for a request a
	// provider may take minutes over (generate_image, speak).
	CallLong(ctx context.Context, typ string, args, result any) error

	// FetchMedia is fetch_media's MCP half: it reads the fetched file in
	// the group folder and renders it (image, transcript, text).
	FetchMedia(ctx context.Context, a Args) *Result
	// SendMedia is send_media's: it checks the path in the group folder
	// before the round trip.
	SendMedia(ctx context.Context, a Args) *Result
	// FetchURL is fetch_url's: it renders the fetched page from the group
	// folder (readable text, document parts, images).
	FetchURL(ctx context.Context, a Args) *Result
	// Remember and Forget change the memory file of the server's group
	// (or the global one): Local tools, no IPC.
	Remember(ctx context.Context, a Args) *Result
	Forget(ctx context.Context, a Args) *Result
}

// StringArg reads an optional string argument; a value of another type is
// an error rather than silently ignored.
func StringArg(a Args, key string) (string, bool, error) {
	v, ok := a[key]
	if !ok || v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, fmt.Errorf("%s must be a string", key)
	}
	return s, true, nil
}

// requiredArg reads a string argument that must not be blank; missing is
// the error's sentence when it is.
func requiredArg(a Args, key, missing string) (string, error) {
	s, _, err := StringArg(a, key)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(s) == "" {
		return "", errors.New(missing)
	}
	return s, nil
}

// into names an optional string argument and where it goes.
type into struct {
	key string
	dst *string
}

// readStrings reads optional string arguments in order; the first of
// another type is the error.
func readStrings(a Args, args ...into) error {
	for _, in := range args {
		s, _, err := StringArg(a, in.key)
		if err != nil {
			return err
		}
		*in.dst = s
	}
	return nil
}

// IntArg accepts an integer however the transport decoded it (JSON gives
// float64; in-process callers may pass int).
func IntArg(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<31 {
			return 0, false
		}
		return int(n), true
	case int:
		return n, true
	case int64:
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// boolArg reads an optional boolean, def when absent.
func boolArg(a Args, key string, def bool) (bool, error) {
	v, ok := a[key]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s must be true or false", key)
	}
	return b, nil
}

// OneLine keeps a stranger-influenced field on its line and short, and
// defuses anything in it that looks like one of botd's placeholders.
func OneLine(s string, max int) string {
	return textclip.Clip(mediaregistry.Neutralize(textclip.OneLine(s, 0)), max)
}

// Codes used in tool errors besides the ipc ones.
const (
	CodeNoHost    = "no_host"
	CodeCancelled = "cancelled"
)

// ErrCode classifies err for logs and tool errors.
func ErrCode(err error) string {
	var ie *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ie):
		return ie.Code
	case errors.Is(err, ErrNoHost), errors.Is(err, context.DeadlineExceeded):
		return CodeNoHost
	case errors.Is(err, context.Canceled):
		return CodeCancelled
	default:
		return CodeInternal
	}
}

// ToolError turns a failed call into a tool result the model can read:
// "fetch_media failed [not_found]: ...". Protocol errors are kept for
// protocol problems; a failed tool is data for the model.
func ToolError(tool string, err error) *Result {
	code := ErrCode(err)
	msg := err.Error()
	var ie *Error
	switch {
	case errors.As(err, &ie):
		msg = ie.Message
	case code == CodeNoHost:
		msg = ErrNoHost.Error()
	}
	return ToolFailure(tool, code, msg)
}

// BadArgs is a tool error for arguments refused before any IPC.
func BadArgs(tool, format string, a ...any) *Result {
	return ToolFailure(tool, CodeBadRequest, fmt.Sprintf(format, a...))
}

// ToolFailure is the one form of every tool error: "tool failed [code]: msg".
func ToolFailure(tool, code, msg string) *Result {
	return &Result{Parts: []Part{Text(fmt.Sprintf("%s failed [%s]: %s", tool, code, msg))}, IsError: true}
}
