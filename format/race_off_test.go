//go:build !race

package format

const bigScale = 1
