package matrix

import (
	"os"
	"testing"

	"github.com/botd-dev/botd/internal/pgtest"
)

// TestMain stops the Postgres server the store tests start.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
