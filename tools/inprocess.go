package tools

import (
	"context"
	"encoding/json"
	"fmt"
)

// InProcess answers one group's tool calls with a Handler directly, for
// the built-in agent: what the IPC host would run, without the round trip
// through files. Arguments and results cross as JSON both ways, exactly as
// over the files, so both paths accept and answer the same. It has no
// request id: nothing replays an in-process call.
type InProcess struct {
	Handler Handler
	Group   string
}

// Call runs one request of type typ and decodes its result into result.
func (c InProcess) Call(ctx context.Context, typ string, args, result any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	res, herr := c.Handler.Handle(ctx, c.Group, &Request{Type: typ, Args: raw})
	if herr != nil {
		return herr
	}
	if result == nil || res == nil {
		return nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	if err := json.Unmarshal(b, result); err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	return nil
}
