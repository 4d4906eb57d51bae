//go:build !race

package websearch_test

const raceEnabled = false
