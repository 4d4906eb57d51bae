package telegram_test

import (
	"os"
	"testing"

	"github.com/botd-dev/botd/store/storetest"
)

// TestMain stops the Postgres server BenchmarkIngest may have started.
func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }
