// Package ingestbench holds the Telegram ingest benchmark, which runs the
// channel into the agent's router. It lives apart from package telegram:
// the agent imports config, config imports every channel, and pulling all
// of that into telegram's own test binary slows its fuzz target to a crawl.
package ingestbench
