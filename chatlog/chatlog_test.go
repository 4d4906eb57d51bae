package chatlog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/chatlog"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
	"github.com/botd-dev/botd/tools"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

var t0 = time.Date(2026, 11, 18, 14, 0, 0, 0, time.UTC)

// put stores messages in chat, the i-th a minute after t0 + i minutes
// unless at says otherwise.
type msg struct {
	chat, id, sender, text string
	at                     time.Time
}

func put(t *testing.T, st *store.Store, ms ...msg) {
	t.Helper()
	ctx := context.Background()
	for _, m := range ms {
		if err := st.UpsertChat(ctx, store.Chat{ID: m.chat, Name: "chat " + m.chat, IsGroup: true, LastMessageAt: m.at}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.PutMessage(ctx, store.Message{ChatID: m.chat, ID: m.id, SenderID: strings.ToLower(m.sender), SenderName: m.sender,
			Text: m.text, Time: m.at}); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

const fam, other = "telegram:-100", "telegram:-200"

func conversation(t *testing.T, st *store.Store) {
	t.Helper()
	put(t, st,
		msg{fam, "1", "Alice", "Who has the tickets for Saturday?", t0},
		msg{fam, "2", "Bob", "I bought the tickets, they are in my bag [Image: tickets.jpg, 120KB, image/jpeg, ref:tg_AbC123] here", t0.Add(time.Minute)},
		msg{fam, "3", "Carol", "Great, see you at the café", t0.Add(2 * time.Minute)},
		msg{fam, "4", "Alice", "The ticket price was high", t0.Add(3 * time.Minute)},
		msg{other, "1", "Mallory", "secret tickets of another group", t0.Add(4 * time.Minute)},
	)
}

func TestSearch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		st := storetest.Open(t, c)
		conversation(t, st)
		log := chatlog.New(st)
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			q    chatlog.Query
			want []string // ids; order only checked when ordered
			ord  bool
		}{
			// Words are prefixes: "ticket" finds "tickets", not the reverse.
			{"word", chatlog.Query{Text: "tickets"}, []string{"1", "2"}, false},
			{"prefix", chatlog.Query{Text: "tick"}, []string{"1", "2", "4"}, false},
			{"all words", chatlog.Query{Text: "tickets bag"}, []string{"2"}, false},
			{"case", chatlog.Query{Text: "SATURDAY"}, []string{"1"}, false},
			{"placeholder ref", chatlog.Query{Text: "tg_AbC123"}, []string{"2"}, false},
			{"sender name", chatlog.Query{Text: "tickets", Sender: "bo"}, []string{"2"}, false},
			{"sender id", chatlog.Query{Text: "ticket", Sender: "alice"}, []string{"1", "4"}, false},
			{"from", chatlog.Query{Text: "ticket", From: t0.Add(time.Minute)}, []string{"2", "4"}, false},
			{"to", chatlog.Query{Text: "tickets", To: t0.Add(time.Minute)}, []string{"1"}, false},
			{"limit", chatlog.Query{Text: "tickets", Limit: 1}, nil, false},
			{"no match", chatlog.Query{Text: "zebra"}, nil, false},
			// Hostile input is words, never syntax.
			{"quote", chatlog.Query{Text: `"ticket`}, []string{"1", "2", "4"}, false},
			{"near", chatlog.Query{Text: `NEAR(tickets bag`}, nil, false},
			{"star minus", chatlog.Query{Text: `-tickets* bag*`}, []string{"2"}, false},
			{"operators", chatlog.Query{Text: `tickets AND OR NOT ( ) : ^ & | ! ' \`}, nil, false},
			{"column filter", chatlog.Query{Text: `text:tickets`}, nil, false},
			{"tsquery", chatlog.Query{Text: `tickets:* & !bag`}, []string{"2"}, false},
			{"huge", chatlog.Query{Text: strings.Repeat("tickets ", 100000)}, []string{"1", "2"}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.q.Chats = []string{fam}
				got, err := log.Search(ctx, tc.q)
				if err != nil {
					t.Fatal(err)
				}
				if tc.name == "limit" {
					if len(got) != 1 {
						t.Fatalf("limit 1 gave %v", ids(got))
					}
					return
				}
				g := ids(got)
				if !tc.ord {
					slices.Sort(g)
				}
				if !slices.Equal(g, tc.want) {
					t.Fatalf("search %q = %v, want %v", clip(tc.q.Text), g, tc.want)
				}
				for _, m := range got {
					if m.ChatID != fam {
						t.Fatalf("a message of %s crossed into the search of %s", m.ChatID, fam)
					}
				}
			})
		}
		got, err := log.Search(ctx, chatlog.Query{Chats: []string{fam}, Text: "tickets bag"})
		if err != nil || len(got) != 1 || !strings.Contains(got[0].Text, "[Image: tickets.jpg, 120KB, image/jpeg, ref:tg_AbC123]") ||
			got[0].SenderName != "Bob" || !got[0].Time.Equal(t0.Add(time.Minute)) {
			t.Fatalf("the match lacks its placeholder, sender or time: %+v %v", got, err)
		}
		// Whatever a query holds, it is words or nothing: never an error of
		// the database's query parser.
		for _, q := range []string{"\u0301\u0301", "x\u0301", "日本語のチケット", "ＴＩＣＫＥＴＳ", "🎟️ tickets", "tick\x00ets", "\xff\xfe tickets",
			"a b c d e f g h i j k l m n o p q r s", strings.Repeat("é", 5000), "''", `\\`, "tickets:*", "NEAR(a b, 3)", "{text}: x"} {
			if _, err := log.Search(ctx, chatlog.Query{Chats: []string{fam}, Text: q}); err != nil && !errors.Is(err, chatlog.ErrEmptyQuery) {
				t.Errorf("query %q: %v", clip(q), err)
			}
		}
		for _, q := range []string{"", "   ", `"*-()`, "!!!"} {
			if _, err := log.Search(ctx, chatlog.Query{Chats: []string{fam}, Text: q}); !errors.Is(err, chatlog.ErrEmptyQuery) {
				t.Errorf("query %q: %v, want ErrEmptyQuery", q, err)
			}
		}
		if _, err := log.Search(ctx, chatlog.Query{Text: "tickets"}); !errors.Is(err, chatlog.ErrNoChats) {
			t.Errorf("no chats: %v", err)
		}
	})
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// TestSearchRanksBestFirst: a message where the word weighs more (short,
// or the word repeated) comes before one where it is a passing mention.
func TestSearchRanksBestFirst(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		st := storetest.Open(t, c)
		long := "we talked about many things today, the weather, the garden, the car, the school, the holidays, " +
			"the neighbours and dinner plans and also briefly concert"
		put(t, st,
			msg{fam, "long", "A", long, t0},
			msg{fam, "short", "B", "concert concert tonight", t0.Add(time.Minute)},
			msg{fam, "none", "C", "nothing here", t0.Add(2 * time.Minute)},
		)
		got, err := chatlog.New(st).Search(context.Background(), chatlog.Query{Chats: []string{fam}, Text: "concert"})
		if err != nil {
			t.Fatal(err)
		}
		if g := ids(got); !slices.Equal(g, []string{"short", "long"}) {
			t.Fatalf("ranked %v, want [short long]", g)
		}
	})
}

// TestIndexFollowsTheMessages: an edit, an upsert and a delete change what
// is found; rows stored before the migration are found (the index is
// built for them).
func TestIndexFollowsTheMessages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		st := storetest.Open(t, c)
		conversation(t, st)
		ctx := context.Background()
		log := chatlog.New(st)
		find := func(q string) []string {
			t.Helper()
			got, err := log.Search(ctx, chatlog.Query{Chats: []string{fam}, Text: q})
			if err != nil {
				t.Fatal(err)
			}
			g := ids(got)
			slices.Sort(g)
			return g
		}
		if ok, err := st.UpdateText(ctx, fam, "3", "See you at the stadium"); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if g := find("café"); len(g) != 0 {
			t.Fatalf("the edited-away word is still found: %v", g)
		}
		if g := find("stadium"); !slices.Equal(g, []string{"3"}) {
			t.Fatalf("the edit is not found: %v", g)
		}
		// An upsert of the same id (a network's edit event).
		put(t, st, msg{fam, "1", "Alice", "Who has the passes?", t0})
		if g := find("ticket"); !slices.Equal(g, []string{"2", "4"}) {
			t.Fatalf("after the upsert: %v", g)
		}
		if _, err := st.DB.ExecContext(ctx, `DELETE FROM messages WHERE chat_id = ? AND id = ?`, fam, "2"); err != nil {
			t.Fatal(err)
		}
		if g := find("ticket"); !slices.Equal(g, []string{"4"}) {
			t.Fatalf("a deleted message is still found: %v", g)
		}
		// A chat deleted takes its messages (ON DELETE CASCADE) and their
		// index entries.
		if _, err := st.DB.ExecContext(ctx, `DELETE FROM chats WHERE id = ?`, fam); err != nil {
			t.Fatal(err)
		}
		if g := find("ticket"); len(g) != 0 {
			t.Fatalf("messages of a deleted chat are found: %v", g)
		}
	})
}

func TestRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		st := storetest.Open(t, c)
		var ms []msg
		for i := 1; i <= 10; i++ {
			ms = append(ms, msg{fam, fmt.Sprint(i), "A", fmt.Sprint("message ", i), t0.Add(time.Duration(i) * time.Minute)})
		}
		// Stored late but sent early: the conversation's order is time.
		ms = append(ms, msg{fam, "late", "B", "sent between 2 and 3", t0.Add(2*time.Minute + 30*time.Second)})
		ms = append(ms, msg{other, "x", "M", "another group", t0.Add(5 * time.Minute)})
		put(t, st, ms...)
		log := chatlog.New(st)
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			w    chatlog.Window
			want []string
		}{
			{"around", chatlog.Window{Dir: chatlog.Around, ID: "5", Limit: 5}, []string{"3", "4", "5", "6", "7"}},
			{"around late", chatlog.Window{Dir: chatlog.Around, ID: "late", Limit: 3}, []string{"2", "late", "3"}},
			{"around start", chatlog.Window{Dir: chatlog.Around, ID: "1", Limit: 4}, []string{"1", "2", "late", "3"}},
			{"around end", chatlog.Window{Dir: chatlog.Around, ID: "10", Limit: 4}, []string{"7", "8", "9", "10"}},
			{"before", chatlog.Window{Dir: chatlog.Before, ID: "4", Limit: 2}, []string{"late", "3"}},
			{"after", chatlog.Window{Dir: chatlog.After, ID: "8", Limit: 5}, []string{"9", "10"}},
			{"latest", chatlog.Window{Dir: chatlog.Before, Limit: 2}, []string{"9", "10"}},
			{"before time", chatlog.Window{Dir: chatlog.Before, Time: t0.Add(4 * time.Minute), Limit: 2}, []string{"late", "3"}},
			{"after time", chatlog.Window{Dir: chatlog.After, Time: t0.Add(4 * time.Minute), Limit: 2}, []string{"4", "5"}},
			{"around time", chatlog.Window{Dir: chatlog.Around, Time: t0.Add(4 * time.Minute), Limit: 2}, []string{"3", "4"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.w.Chats = []string{fam}
				got, err := log.Read(ctx, tc.w)
				if err != nil {
					t.Fatal(err)
				}
				if g := ids(got); !slices.Equal(g, tc.want) {
					t.Fatalf("read = %v, want %v", g, tc.want)
				}
			})
		}
		// Another chat's message id is no anchor here.
		if _, err := log.Read(ctx, chatlog.Window{Chats: []string{fam}, ID: "x"}); !errors.Is(err, chatlog.ErrNotFound) {
			t.Fatalf("another chat's id: %v, want ErrNotFound", err)
		}
	})
}

func TestChats(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		st := storetest.Open(t, c)
		conversation(t, st)
		got, err := chatlog.New(st).Chats(context.Background(), []string{fam, "telegram:never"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != fam || got[0].Name != "chat "+fam || !got[0].LastMessageAt.Equal(t0.Add(3*time.Minute)) {
			t.Fatalf("chats = %+v", got)
		}
	})
}

// A database copied from SQLite to Postgres (`botd database copy`) is
// searched the same: SQLite's index stays behind, Postgres indexes the
// rows as they arrive.
func TestSearchAfterCopyToPostgres(t *testing.T) {
	from := storetest.Open(t, storetest.Config(t, sqldialect.SQLite))
	conversation(t, from)
	to := storetest.Open(t, storetest.Config(t, sqldialect.Postgres))
	if _, err := from.CopyTo(context.Background(), to); err != nil {
		t.Fatal(err)
	}
	got, err := chatlog.New(to).Search(context.Background(), chatlog.Query{Chats: []string{fam}, Text: "tickets bag"})
	if err != nil || len(got) != 1 || got[0].ID != "2" {
		t.Fatalf("search on the copy: %v %v", ids(got), err)
	}
}

// When more messages match than the rank window, the newest window's
// worth are ranked: an older, better match is reached by narrowing the
// time (as search_messages tells the model).
func TestSearchRanksTheNewestWindow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		st := storetest.Open(t, c)
		ctx := context.Background()
		put(t, st, msg{fam, "best", "A", "concert", t0})
		tx, err := st.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range tools.SearchRankWindow {
			if _, err := tx.ExecContext(ctx, `INSERT INTO messages(chat_id, id, sender_id, sender_name, text, ts) VALUES (?, ?, '', 'B', ?, ?)`,
				fam, fmt.Sprint("n", i), "we went to the concert with the whole family last night", t0.Add(time.Duration(i+1)*time.Minute).UnixMilli()); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		log := chatlog.New(st)
		got, err := log.Search(ctx, chatlog.Query{Chats: []string{fam}, Text: "concert", Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 5 || slices.Contains(ids(got), "best") {
			t.Fatalf("with %d newer matches: %v; want 5 of the newer ones", tools.SearchRankWindow, ids(got))
		}
		got, err = log.Search(ctx, chatlog.Query{Chats: []string{fam}, Text: "concert", To: t0.Add(time.Hour), Limit: 5})
		if err != nil || len(got) == 0 || got[0].ID != "best" {
			t.Fatalf("narrowed to the first hour: %v %v; want best first", ids(got), err)
		}
	})
}
