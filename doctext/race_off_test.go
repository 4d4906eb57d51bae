//go:build !race

package doctext

const raceOn = false
