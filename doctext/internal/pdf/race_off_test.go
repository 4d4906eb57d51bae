//go:build !race

package pdf

const raceOn = false
