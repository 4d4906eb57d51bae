//go:build !notelegram

package main

import _ "github.com/botd-dev/botd/channels/telegram"
