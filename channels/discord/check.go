package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/botd-dev/botd/channels"
)

// Application flags that grant the Message Content intent: the full one
// (a verified bot approved for it) or the limited one (the developer
// portal's switch, for bots in fewer than 100 servers).
const (
	flagGatewayMessageContent        = 1 << 18
	flagGatewayMessageContentLimited = 1 << 19
)

// Check is what `botd config check` asks of channels.discord: that the
// token belongs to a bot (GET /users/@me) and that its application has the
// Message Content intent switched on (GET /applications/@me), which botd
// needs to read what was said. It connects to no gateway.
func Check(ctx context.Context, cfg Config) error {
	_, err := check(ctx, cfg)
	return err
}

var _ channels.Checker = (*Discord)(nil)

// Check is the package's Check for `botd doctor`, naming the bot.
func (d *Discord) Check(ctx context.Context) (string, error) { return check(ctx, d.cfg) }

func check(ctx context.Context, cfg Config) (string, error) {
	cfg = cfg.withDefaults()
	if cfg.Token == "" {
		return "", fmt.Errorf("channels.discord.token is empty (set DISCORD_BOT_TOKEN)")
	}
	c := &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var me struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Bot      bool   `json:"bot"`
	}
	if err := checkGet(ctx, c, cfg, "/users/@me", &me); err != nil {
		return "", err
	}
	if !me.Bot {
		return "", fmt.Errorf("channels.discord.token belongs to the user %q, not a bot: use the token from Developer Portal → your application → Bot", me.Username)
	}
	var app struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		Flags int64  `json:"flags"`
	}
	if err := checkGet(ctx, c, cfg, "/applications/@me", &app); err != nil {
		return "", err
	}
	if app.Flags&(flagGatewayMessageContent|flagGatewayMessageContentLimited) == 0 {
		return "", fmt.Errorf("the bot %s has no Message Content intent, so it would see empty messages: Developer Portal → %s → Bot → "+
			"Privileged Gateway Intents → turn on Message Content Intent", me.Username, app.Name)
	}
	return fmt.Sprintf("bot %s (id %s)", me.Username, me.ID), nil
}

func checkGet(ctx context.Context, c *http.Client, cfg Config, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.APIURL+path, nil)
	if err != nil {
		return fmt.Errorf("channels.discord.api_url: %w", err)
	}
	req.Header.Set("Authorization", "Bot "+cfg.Token)
	req.Header.Set("User-Agent", "DiscordBot (https://github.com/botd-dev/botd, 1)")
	resp, err := c.Do(req)
	if err != nil {
		return channels.Unreachable("GET %s%s: %s", cfg.APIURL, path, redact(err.Error(), cfg.Token))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("discord rejected channels.discord.token (401 on %s): reset it in Developer Portal → your application → Bot and set DISCORD_BOT_TOKEN", path)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET %s: HTTP %d: %s", path, resp.StatusCode, strings.TrimSpace(redact(string(body[:min(len(body), 300)]), cfg.Token)))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}
