package mediaregistry_test

import (
	"context"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
	"testing"
	"time"

	"github.com/botd-dev/botd/mediaregistry"
)

// What every chat posted per day, and what of it was downloaded: the
// picture of what lazy fetching saves.
func TestDaily(t *testing.T) { storetest.Each(t, testDaily) }

func testDaily(t *testing.T, db store.Config) {
	ctx := context.Background()
	st := openStore(t, db)
	reg := mediaregistry.New(st.DB, 0)
	day1 := time.Date(2026, 11, 20, 23, 30, 0, 0, time.UTC)
	day2 := day1.Add(time.Hour) // just past midnight UTC
	var refs []*mediaregistry.MediaReference
	for i, at := range []time.Time{day1, day1, day2} {
		reg.SetClock(func() time.Time { return at })
		ref := &mediaregistry.MediaReference{Channel: "web", Chat: "web:main", Kind: mediaregistry.Image, Size: int64(1000 * (i + 1)), Private: []byte("f")}
		if err := reg.Register(ctx, ref); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	reg.Downloaded(ctx, refs[1].ID, 2000)
	reg.Downloaded(ctx, refs[1].ID, 2000)
	days, err := reg.Daily(ctx, day1.Add(-48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 2 {
		t.Fatalf("%d days: %+v", len(days), days)
	}
	want := []mediaregistry.DayStats{
		{Day: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Stats: mediaregistry.Stats{Refs: 2, Fetched: 1, Posted: 3000, Downloaded: 4000}},
		{Day: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), Stats: mediaregistry.Stats{Refs: 1, Posted: 3000}},
	}
	for i := range want {
		if !days[i].Day.Equal(want[i].Day) || days[i].Stats != want[i].Stats {
			t.Errorf("day %d: %+v, want %+v", i, days[i], want[i])
		}
	}
	if later, _ := reg.Daily(ctx, day2.Add(time.Hour)); len(later) != 0 {
		t.Errorf("since after every ref: %+v", later)
	}
}
