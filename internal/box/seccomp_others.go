//go:build linux && !amd64 && !arm64

package box

// No filter on other architectures: their ABIs (socketcall, clone's
// argument order) are not the filter's.
const (
	auditArch = 0
	foreignNr = 0
)
