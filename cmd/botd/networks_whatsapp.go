//go:build !nowhatsapp

package main

import _ "github.com/botd-dev/botd/channels/whatsapp"
