// Package llm is the provider seam between the agent loop and the language
// model vendors.
//
// Everything that crosses the seam is defined here: a normalised [Request]
// of [Message]s made of [Part]s, a [Result] or a stream of [Chunk]s, a
// [Usage] whose input is net of cache and whose cost comes from our own
// pricing table, and one classified [Error]. No vendor type leaks out of an
// adapter (llm/anthropic, llm/openai, llm/gemini), so an
// adapter can be swapped or added without the agent loop noticing. The
// one exception is opaque: a vendor block ([PartVendor]) the vendor wants
// back verbatim rides in the history as JSON nobody outside its adapter
// reads.
//
// Adapters stay dumb: they translate one vendor and never retry. Retries,
// failover and cooldowns are policy and live in [Chain], which implements
// [Provider] itself so the agent can use a chain or a single adapter
// interchangeably.
package llm
