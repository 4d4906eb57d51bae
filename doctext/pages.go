package doctext

import (
	"fmt"
	"strconv"
	"strings"
)

// span is a range of pages asked for; to 0 means to the end.
type span struct{ from, to int }

func parsePages(s string) (span, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return span{1, 0}, nil
	}
	bad := fmt.Errorf(`%w %q: give one page ("7"), a range ("3-5") or a start ("3-")`, ErrPages, s)
	a, b, isRange := strings.Cut(s, "-")
	from, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil || from < 1 {
		return span{}, bad
	}
	if !isRange {
		return span{from, from}, nil
	}
	if strings.TrimSpace(b) == "" {
		return span{from, 0}, nil
	}
	to, err := strconv.Atoi(strings.TrimSpace(b))
	if err != nil || to < from {
		return span{}, bad
	}
	return span{from, to}, nil
}

// clamp fits the span to a document of n units, refusing one that starts
// past the end.
func (s span) clamp(n int, unit string) (span, error) {
	if s.from > n {
		return span{}, fmt.Errorf("%w: %s %d asked for, but the document has %s", ErrPages, unit, s.from, count(n, unit))
	}
	if s.to == 0 || s.to > n {
		s.to = n
	}
	return s, nil
}

func (s span) String() string {
	if s.from == s.to {
		return strconv.Itoa(s.from)
	}
	return fmt.Sprintf("%d-%d", s.from, s.to)
}

func count(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
