//go:build race

package webfetch

// raceEnabled: the race detector multiplies memory, so RSS figures mean nothing under it.
const raceEnabled = true
