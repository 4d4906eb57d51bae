// Package wake holds the one "look again" signal of botd's loops: a
// poke that never blocks the poker and that coalesces, so any number of
// pokes while the loop is busy make it look exactly once more.
package wake

// Signal is a buffered channel of one. Make it with New; the zero value
// is a nil channel, on which Wake drops every poke and C never receives.
type Signal chan struct{}

// New returns a Signal ready to use.
func New() Signal { return make(Signal, 1) }

// Wake pokes the loop without ever blocking: a poke already pending
// stands for this one too.
func (s Signal) Wake() {
	select {
	case s <- struct{}{}:
	default:
	}
}

// C is what the loop selects on.
func (s Signal) C() <-chan struct{} { return s }
