//go:build !nomatrix

package main

import _ "github.com/botd-dev/botd/channels/matrix"
