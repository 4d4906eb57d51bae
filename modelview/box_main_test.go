package modelview

import (
	"os"
	"testing"

	"github.com/botd-dev/botd/internal/box"
)

// TestMain lets the test binary serve as the child of package box: the
// parsers of members' files run there.
func TestMain(m *testing.M) {
	box.Main()
	os.Exit(m.Run())
}
