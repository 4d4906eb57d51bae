package diskbudget

// Sweeps is how many sweeps b has finished.
func Sweeps(b *Budget) int64 { return b.sweeps.Load() }
