// Package webbench holds the web channel's benchmarks, which run the
// channel into the agent's router and the store. It lives apart from
// package web for the reason ingestbench lives apart from telegram: the
// agent imports config, and config imports every channel.
package webbench
