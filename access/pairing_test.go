package access

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// fakeNow is a settable clock for the store.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) Add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func newStore(t *testing.T, c store.Config) (*Store, *fakeNow) {
	t.Helper()
	st := storetest.Open(t, c)
	clk := &fakeNow{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	return &Store{DB: st.DB, Now: clk.Now}, clk
}

func TestCodes(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		c := newCode()
		if len(c) != codeLen || strings.ContainsAny(c, "IO01") {
			t.Fatalf("code %q: want %d symbols of the unambiguous alphabet", c, codeLen)
		}
		if seen[c] {
			t.Fatalf("code %q drawn twice in 2000", c)
		}
		seen[c] = true
		if got, err := ParseCode(strings.ToLower(ShowCode(c))); err != nil || got != c {
			t.Fatalf("ParseCode(%q) = %q, %v", ShowCode(c), got, err)
		}
	}
	for _, bad := range []string{"", "ABCD", "ABCD-EF2O", "ABCD-EF231", "ABCD_EF23", "ABCDEF2é"} {
		if _, err := ParseCode(bad); !errors.Is(err, ErrBadCode) {
			t.Errorf("ParseCode(%q) = %v, want ErrBadCode", bad, err)
		}
	}
}

func TestAskTellsOncePerHourAcrossRestarts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		s, clk := newStore(t, c)
		r := Request{Chat: "telegram:-100", ChatName: "Family", IsGroup: true, SenderID: "7", SenderName: "Ann"}
		code, tell, err := s.Ask(ctx, r)
		if err != nil || code == "" || !tell {
			t.Fatalf("first ask = %q, %v, %v; want a code, told", code, tell, err)
		}
		clk.Add(59 * time.Minute)
		// A restart: a new Store on the same database.
		s2 := &Store{DB: s.DB, Now: clk.Now}
		again, tell, err := s2.Ask(ctx, r)
		if err != nil || again != code || tell {
			t.Fatalf("ask within the hour = %q, %v, %v; want the same code %q, not told", again, tell, err, code)
		}
		clk.Add(2 * time.Minute)
		again, tell, err = s2.Ask(ctx, r)
		if err != nil || again != code || !tell {
			t.Fatalf("ask after the hour = %q, %v, %v; want %q, told again", again, tell, err, code)
		}
		// Expired: a new code.
		clk.Add(CodeTTL)
		fresh, tell, err := s2.Ask(ctx, r)
		if err != nil || fresh == code || fresh == "" || !tell {
			t.Fatalf("ask after expiry = %q, %v, %v; want a new code", fresh, tell, err)
		}
		if _, err := s2.Approve(ctx, code, Approval{By: "cli"}); !errors.Is(err, ErrNoCode) {
			t.Errorf("approving the expired code = %v, want ErrNoCode", err)
		}
	})
}

func TestFloodIsBounded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		s, clk := newStore(t, c)
		told := 0
		for i := range 3 * MaxPending {
			_, tell, err := s.Ask(ctx, Request{Chat: fmt.Sprintf("telegram:-%d", 1000+i), IsGroup: true})
			if err != nil {
				t.Fatal(err)
			}
			if tell {
				told++
			}
			clk.Add(time.Second)
		}
		if told != MaxRepliesPerHour {
			t.Errorf("replies to %d chats in a few minutes = %d, want %d", 3*MaxPending, told, MaxRepliesPerHour)
		}
		p, err := s.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != MaxPending {
			t.Fatalf("pending = %d, want the cap %d", len(p), MaxPending)
		}
		// The newest stay.
		if p[0].Chat != fmt.Sprintf("telegram:-%d", 1000+3*MaxPending-1) || p[len(p)-1].Chat != fmt.Sprintf("telegram:-%d", 1000+2*MaxPending) {
			t.Errorf("pending runs %s … %s; want the newest %d", p[0].Chat, p[len(p)-1].Chat, MaxPending)
		}
		// An hour on, replies are possible again; the sweep leaves the
		// reply table empty of what is older than the limit.
		clk.Add(time.Hour)
		if _, err := s.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM pairing_replies`).Scan(&n); err != nil || n != 0 {
			t.Errorf("reply marks after the sweep = %d, %v; want 0", n, err)
		}
		if _, tell, err := s.Ask(ctx, Request{Chat: "telegram:-1", IsGroup: true}); err != nil || !tell {
			t.Errorf("an hour later: told = %v, %v; want told", tell, err)
		}
	})
}

func TestApproveDenyRemove(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		s, _ := newStore(t, c)
		ask := func(chat, name string) string {
			t.Helper()
			code, _, err := s.Ask(ctx, Request{Chat: chat, ChatName: name, IsGroup: true})
			if err != nil {
				t.Fatal(err)
			}
			return code
		}
		cFam := ask("telegram:-100", "Family Chat!")
		cTaken := ask("telegram:-200", "Family Chat")
		cDeny := ask("slack:C9", "")
		configFolders := map[string]bool{"family-chat-2": true, "telegram:-300": true}
		taken := func(v string) bool { return configFolders[v] }

		k, err := s.Approve(ctx, strings.ToLower(ShowCode(cFam)), Approval{By: "cli", Taken: taken})
		if err != nil || k.Folder != "family-chat" || k.Name != "Family Chat!" || k.Chat != "telegram:-100" {
			t.Fatalf("approve = %+v, %v; want folder family-chat from the name", k, err)
		}
		if _, err := s.Approve(ctx, cFam, Approval{By: "cli"}); !errors.Is(err, ErrNoCode) {
			t.Errorf("a code used twice: %v, want ErrNoCode", err)
		}
		// family-chat is kept, family-chat-2 is the config's: -3.
		k2, err := s.Approve(ctx, cTaken, Approval{By: "telegram:1", Taken: taken})
		if err != nil || k2.Folder != "family-chat-3" {
			t.Fatalf("second approve = %+v, %v; want folder family-chat-3", k2, err)
		}
		for _, tc := range []struct {
			name, folder, want string
		}{
			{"reserved folder", "media", "reserved"},
			{"bad folder", "../x", "not a valid folder"},
			{"folder taken", "family-chat", "already a group's"},
		} {
			code := ask("telegram:-4"+tc.name[:1], "")
			if _, err := s.Approve(ctx, code, Approval{Folder: tc.folder, Taken: taken}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: approve = %v, want %q", tc.name, err, tc.want)
			}
		}
		r, err := s.Deny(ctx, cDeny)
		if err != nil || r.Chat != "slack:C9" {
			t.Fatalf("deny = %+v, %v", r, err)
		}
		if code, tell, err := s.Ask(ctx, Request{Chat: "slack:C9", IsGroup: true}); err != nil || code != "" || tell {
			t.Errorf("a denied chat asking again = %q, %v, %v; want nothing", code, tell, err)
		}
		kept, err := s.Kept(ctx)
		if err != nil || len(kept) != 2 || kept[0].Folder != "family-chat" || kept[1].ApprovedBy != "telegram:1" {
			t.Fatalf("kept = %+v, %v", kept, err)
		}
		if _, err := s.Remove(ctx, "family-chat"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Remove(ctx, "family-chat"); !errors.Is(err, ErrNotKept) {
			t.Errorf("removing twice: %v, want ErrNotKept", err)
		}
		if kept, _ := s.Kept(ctx); len(kept) != 1 {
			t.Errorf("kept after remove = %+v", kept)
		}
	})
}

func TestFolderFor(t *testing.T) {
	for _, tc := range []struct {
		r    Request
		want string
	}{
		{Request{Chat: "telegram:-100", ChatName: "Family Chat"}, "family-chat"},
		{Request{Chat: "telegram:-100", ChatName: "👪"}, "telegram-100"},
		{Request{Chat: "matrix:!abc:example.org", ChatName: ""}, "matrix-abc-example-org"},
		{Request{Chat: "telegram:-100", ChatName: "Media"}, "telegram-100"}, // a reserved name
		{Request{Chat: "web:x", ChatName: strings.Repeat("ab ", 40)}, "ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-a"},
	} {
		if got := folderFor(tc.r); got != tc.want {
			t.Errorf("folderFor(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

// BenchmarkAskFlood is what one stranger's addressed message costs while
// a flood from many chats runs: the pending table is full, no reply is
// due (one transaction: a lookup, an insert, the trim).
func BenchmarkAskFlood(b *testing.B) {
	storetest.EachB(b, func(b *testing.B, c store.Config) {
		ctx := context.Background()
		st := storetest.Open(b, c)
		clk := &fakeNow{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
		s := &Store{DB: st.DB, Now: clk.Now}
		for i := range MaxPending + MaxRepliesPerHour {
			if _, _, err := s.Ask(ctx, Request{Chat: fmt.Sprintf("telegram:-%d", i), IsGroup: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			clk.Add(time.Millisecond)
			if _, tell, err := s.Ask(ctx, Request{Chat: fmt.Sprintf("telegram:-%d", 10000+i), IsGroup: true}); err != nil || tell {
				b.Fatalf("ask = %v, %v", tell, err)
			}
		}
		b.StopTimer()
		var n int
		if err := st.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM pairing_requests`).Scan(&n); err != nil || n != MaxPending {
			b.Fatalf("pending after the flood = %d, %v; want %d", n, err, MaxPending)
		}
	})
}
