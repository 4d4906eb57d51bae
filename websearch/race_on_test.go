//go:build race

package websearch_test

// raceEnabled: the race detector multiplies memory, so RSS figures mean
// nothing under it.
const raceEnabled = true
