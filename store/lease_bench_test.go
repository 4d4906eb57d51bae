package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

// BenchmarkFencedDelivery: an answer's claim and completion (with its
// cursor move), unfenced and fenced by a held lease: what the epoch check
// in each transaction costs.
func BenchmarkFencedDelivery(b *testing.B) {
	storetest.EachB(b, func(b *testing.B, c store.Config) {
		for _, fenced := range []bool{false, true} {
			name := "unfenced"
			if fenced {
				name = "fenced"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				st := storetest.Open(b, c)
				if fenced {
					if _, ok, err := st.TryAcquireLease(ctx, "A", time.Now(), time.Hour); !ok || err != nil {
						b.Fatal(ok, err)
					}
				}
				ids := make([]int64, b.N)
				for i := range ids {
					id, err := st.AddOutbox(ctx, store.OutboxItem{Folder: "fam", ChatID: "telegram:1", UpToSeq: int64(i + 1), Text: "hi"})
					if err != nil {
						b.Fatal(err)
					}
					ids[i] = id
				}
				b.ResetTimer()
				for _, id := range ids {
					if err := st.ClaimOutbox(ctx, id); err != nil {
						b.Fatal(err)
					}
					if err := st.CompleteOutbox(ctx, id); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}
