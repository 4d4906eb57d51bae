//go:build race

package pdf

// raceOn: the race detector multiplies CPU time, so the corpus reads the
// first pages of each file only.
const raceOn = true
