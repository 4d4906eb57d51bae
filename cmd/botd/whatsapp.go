//go:build !nowhatsapp

package main

import (
	"context"
	"io"

	"github.com/botd-dev/botd/channels/whatsapp"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/store"
)

// The login command comes with the network: a build without WhatsApp
// (-tags nowhatsapp) has neither.
func init() {
	networkCommands = append(networkCommands, command{"whatsapp", "botd whatsapp login [--phone +NUMBER] [--config FILE]",
		"pair a WhatsApp account (QR code, or a pairing code with --phone)", cmdWhatsApp})
}

func cmdWhatsApp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("whatsapp login", "botd whatsapp login [--phone +NUMBER] [--config FILE]",
		"Pair a WhatsApp account: scan the QR code, or enter the pairing code sent for --phone.", stderr)
	phone := fs.String("phone", "", "phone number in international format (+4915...) for a pairing code instead of a QR code")
	cfgFlag := configFlag(fs)
	if len(args) == 0 || args[0] != "login" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil
		}
		fs.Usage()
		return fail(2, "")
	}
	cfg, err := parseAndLoad(fs, args[1:], cfgFlag)
	if err != nil {
		return err
	}
	err = whatsapp.Login(ctx, whatsapp.LoginOptions{
		Session: whatsapp.SessionFor(*cfg.Channels.Network("whatsapp").(*whatsapp.Config), *config.Section[store.Config](cfg), cfg.DataDir),
		Phone:   *phone,
		Out:     stdout,
		Log:     newLogger("warn", stderr),
	})
	if err != nil {
		return fail(1, "%v", err)
	}
	return nil
}
