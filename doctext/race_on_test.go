//go:build race

package doctext

// raceOn: the race detector multiplies memory and CPU time, so measured
// bounds are not asserted under it.
const raceOn = true
