package telegram

import (
	"context"
	"errors"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"golang.org/x/net/html"

	"github.com/botd-dev/botd/format"
)

// render formats markdown as Telegram HTML (parse mode HTML) and cuts it
// into pieces of at most limit visible characters, never inside an
// entity. A variable so tests can show what a refused piece does.
var render = func(md string, limit int) []string { return format.Render(md, format.Telegram, limit) }

// Telegram asks for exactly these three to be escaped outside tags;
// quotes stay readable in the Bot API's own logs and in the fake's.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escapeHTML(s string) string { return htmlEscaper.Replace(s) }

// plainOf is the text an HTML piece shows, without its markup: what goes
// out instead when Telegram cannot parse the piece. Working per piece
// keeps the fallback one message per message, and its visible length is
// the piece's own, so it fits where the piece did.
func plainOf(piece string) string {
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(piece))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			b.Write(z.Text()) // Text unescapes entities
		}
	}
}

// cantParse reports Telegram's refusal of malformed markup.
func cantParse(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "can't parse entities")
}

// notModified reports an edit to what the message already shows: the
// message is as wanted, so it is no failure.
func notModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "message is not modified")
}

// formatted runs one call with an HTML piece and, when Telegram cannot
// parse it, once more with its plain text and no parse mode.
func (t *Telegram) formatted(ctx context.Context, where, piece string, call func(text string, mode models.ParseMode) error) error {
	err := call(piece, models.ParseModeHTML)
	if !cantParse(err) {
		return err
	}
	t.log.Warn("telegram refused the formatted text; sending it plain", "chat", where, "err", redact(err.Error(), t.cfg.Token))
	return call(plainOf(piece), "")
}
