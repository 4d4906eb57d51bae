//go:build !race

package webfetch

const raceEnabled = false
