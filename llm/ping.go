package llm

import "context"

// Ping asks model of p for one token: the cheapest call that proves the
// key, the base URL and the model name together (`botd doctor --online`).
// Its error is an *Error: KindAuth for a rejected key, KindBadRequest for
// a model the vendor does not know.
func Ping(ctx context.Context, p Provider, model string) error {
	_, err := p.Generate(ctx, &Request{
		Model:     model,
		Messages:  []Message{{Role: RoleUser, Parts: []Part{Text("Reply with one word: ok")}}},
		MaxTokens: 1,
	})
	return err
}
