package transcribe

// SetJoinHook makes t call f whenever a Transcribe joins a provider call
// under way, so tests know a caller waits without sleeping.
func SetJoinHook(t *Transcriber, f func()) { t.joined = f }
