package chatlog_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/botd-dev/botd/chatlog"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
	"github.com/botd-dev/botd/tools"
)

// Times the tools take: RFC 3339, a date and minute, or a date in the
// service's timezone; a date as "to" includes that day.
func TestServiceTimes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		st := storetest.Open(t, c)
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Skip("no tzdata:", err)
		}
		// 23:30 in Berlin on the 17th is 22:30 UTC: which day it is
		// depends on the zone the tools read dates in.
		put(t, st,
			msg{fam, "late17", "A", "tickets late on the 17th", time.Date(2026, 11, 17, 23, 30, 0, 0, berlin)},
			msg{fam, "18", "A", "tickets on the 18th", time.Date(2026, 11, 18, 12, 0, 0, 0, berlin)},
			msg{fam, "19", "A", "tickets on the 19th", time.Date(2026, 11, 19, 0, 10, 0, 0, berlin)},
		)
		gs, err := groups.NewSet("Andy", []groups.Group{{Folder: "family", Chat: fam, RequiresTrigger: true}})
		if err != nil {
			t.Fatal(err)
		}
		g, _ := gs.ByFolder("family")
		svc := chatlog.NewService(st, gs, berlin, nil)
		for _, tc := range []struct {
			from, to string
			want     []string
		}{
			{"2026-11-18", "2026-11-18", []string{"18"}},
			{"2026-11-17", "", []string{"18", "19", "late17"}},
			{"", "2026-11-17", []string{"late17"}},
			{"2026-11-17T22:00:00Z", "2026-11-18T12:00:00+01:00", []string{"late17"}},
			{"2026-11-18 12:00", "2026-11-19T00:10", []string{"18"}},
		} {
			res, herr := svc.SearchMessages(context.Background(), g, tools.SearchMessagesArgs{Query: "tickets", From: tc.from, To: tc.to})
			if herr != nil {
				t.Fatalf("%s..%s: %v", tc.from, tc.to, herr)
			}
			var got []string
			for _, m := range res.Messages {
				got = append(got, m.ID)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%s..%s: %v, want %v", tc.from, tc.to, got, tc.want)
			}
			for _, w := range tc.want {
				found := false
				for _, id := range got {
					found = found || id == w
				}
				if !found {
					t.Fatalf("%s..%s: %v, want %v", tc.from, tc.to, got, tc.want)
				}
			}
		}
		if _, herr := svc.SearchMessages(context.Background(), g, tools.SearchMessagesArgs{Query: "tickets", To: "yesterday"}); herr == nil || herr.Code != tools.CodeBadRequest {
			t.Fatalf("to: yesterday: %v", herr)
		}
		// A group not registered is refused before anything is read.
		if _, herr := svc.Handle(context.Background(), "ghost", &tools.Request{ID: "1", Type: tools.ListChats}); herr == nil || herr.Code != tools.CodeForbidden {
			t.Fatalf("an unregistered group: %v", herr)
		}
	})
}

// A long message comes back cut, with every placeholder whole after the
// cut, so each ref can still be fetched.
func TestServiceCutsLongMessagesKeepingRefs(t *testing.T) {
	st := storetest.Open(t, storetest.Config(t, "sqlite"))
	long := strings.Repeat("tickets and more words ", 200) + "[Image: a.jpg, 1KB, image/jpeg, ref:tg_Aaaa1111Aa] " +
		strings.Repeat("x", 3000) + " [Document: b.pdf, 2KB, application/pdf, ref:tg_Bbbb2222Bb]"
	put(t, st, msg{fam, "long", "A", long, t0})
	gs, err := groups.NewSet("Andy", []groups.Group{{Folder: "family", Chat: fam, RequiresTrigger: true}})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gs.ByFolder("family")
	res, herr := chatlog.NewService(st, gs, time.UTC, nil).SearchMessages(context.Background(), g, tools.SearchMessagesArgs{Query: "tickets"})
	if herr != nil || len(res.Messages) != 1 {
		t.Fatalf("%v %v", res, herr)
	}
	text := res.Messages[0].Text
	if n := utf8.RuneCountInString(text); n > tools.MaxMessageRunes+200 || n >= utf8.RuneCountInString(long) {
		t.Fatalf("the message came back with %d runes", n)
	}
	for _, ref := range []string{"ref:tg_Aaaa1111Aa]", "ref:tg_Bbbb2222Bb]"} {
		if !strings.Contains(text, ref) {
			t.Errorf("the cut message lost %s", ref)
		}
	}
}
