package web

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

// BenchmarkAuthenticate is what authenticating one request costs: the
// cookie's signature, then the session as this instance knows it
// (cached: read within sessionCheck) or read from the database (every
// sessionCheck per session, or at every request of a session not seen).
func BenchmarkAuthenticate(b *testing.B) {
	storetest.EachB(b, func(b *testing.B, c store.Config) {
		st := storetest.Open(b, c)
		a, _, err := openAuth(context.Background(), b.TempDir(), "", st, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			b.Fatal(err)
		}
		rec := httptest.NewRecorder()
		if err := a.issue(rec, httptest.NewRequest("POST", "/login", nil), session{Role: roleAdmin}); err != nil {
			b.Fatal(err)
		}
		r := httptest.NewRequest("GET", "/r/main", nil)
		r.AddCookie(rec.Result().Cookies()[0])
		for _, tc := range []struct {
			name  string
			check time.Duration
		}{{"cached", sessionCheck}, {"database", 0}} {
			b.Run(tc.name, func(b *testing.B) {
				a.check = tc.check
				b.ReportAllocs()
				for b.Loop() {
					if a.session(r) == nil {
						b.Fatal("the session was refused")
					}
				}
			})
		}
	})
}
