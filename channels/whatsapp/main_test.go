package whatsapp

import (
	"os"
	"testing"

	"github.com/botd-dev/botd/internal/pgtest"
)

// The session store's tests on Postgres share one server per test binary.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
