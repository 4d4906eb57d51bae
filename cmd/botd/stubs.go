package main

import (
	"context"
	"io"
)

func cmdMCP(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mcp", "botd mcp (--group FOLDER | --http ADDR) [--config FILE]",
		"Serve the media tools over MCP: stdio for one group, or Streamable HTTP with bearer tokens.", stderr)
	fs.String("group", "", "group folder to serve over stdio")
	fs.String("http", "", "address for Streamable HTTP (loopback unless told otherwise)")
	configFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	return errNotYet("botd mcp")
}

func cmdWhatsApp(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("whatsapp login", "botd whatsapp login [--phone +NUMBER] [--config FILE]",
		"Pair a WhatsApp account: scan the QR code, or enter the pairing code sent for --phone.", stderr)
	fs.String("phone", "", "phone number in international format for a pairing code instead of a QR code")
	configFlag(fs)
	if len(args) == 0 || args[0] != "login" {
		fs.Usage()
		return fail(2, "")
	}
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	return errNotYet("botd whatsapp login")
}
