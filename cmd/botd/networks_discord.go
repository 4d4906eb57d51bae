//go:build !nodiscord

package main

import _ "github.com/botd-dev/botd/channels/discord"
