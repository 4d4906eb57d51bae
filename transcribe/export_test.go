package transcribe

import "io"

// SetJoinHook makes t call f whenever a Transcribe joins a provider call
// under way, so tests know a caller waits without sleeping.
func SetJoinHook(t *Transcriber, f func()) { t.joined = f }

var FileName = fileName

func NewBase64Reader(r io.Reader) io.Reader { return newBase64Reader(r) }
