//go:build race

package format

// bigScale divides the sizes of the tests that render megabytes: the
// race detector makes them ten times slower, and what they prove (a
// budget that holds, a cost that grows linearly) holds at a quarter.
const bigScale = 4
