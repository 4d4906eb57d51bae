//go:build !noslack

package main

import _ "github.com/botd-dev/botd/channels/slack"
