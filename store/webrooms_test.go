package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func roomMsg(room, id string, at time.Time) WebRoomMessage {
	return WebRoomMessage{Room: room, ID: id, Time: at, From: "Ann", Text: "text of " + id}
}

// Messages appended on two instances are numbered in one sequence per
// room, read back whole on either, newest n or after a seq; an id is
// added once.
func TestWebRoomMessagesShared(t *testing.T) { drivers(t, testWebRoomMessagesShared) }

func testWebRoomMessagesShared(t *testing.T, c Config) {
	ctx := context.Background()
	a, b := open(t, c), open(t, c)
	full := WebRoomMessage{Room: "main", ID: "m1", Time: t0.Add(123456789 * time.Nanosecond), From: "Andy", Assistant: true,
		Text: "**hi**", Files: `[{"id":"f1","name":"a.png"}]`, ReplyTo: "q1", Note: "stopped"}
	got, added, err := a.AppendWebRoomMessage(ctx, full)
	if err != nil || !added || got.Seq != 1 {
		t.Fatalf("first append = %+v, %v, %v", got, added, err)
	}
	if got.Time.UnixMilli() != full.Time.UnixMilli() || !got.Time.Equal(time.UnixMilli(full.Time.UnixMilli())) {
		t.Errorf("time %v, want %v to the millisecond", got.Time, full.Time)
	}
	for i, s := range []*Store{b, a, b} {
		m, added, err := s.AppendWebRoomMessage(ctx, roomMsg("main", fmt.Sprintf("m%d", i+2), t0))
		if err != nil || !added || m.Seq != int64(i+2) {
			t.Fatalf("append %d = %+v, %v, %v", i+2, m, added, err)
		}
	}
	if m, _, err := a.AppendWebRoomMessage(ctx, roomMsg("team", "m1", t0)); err != nil || m.Seq != 1 {
		t.Fatalf("another room's first message: %+v, %v (the same id in another room is another message)", m, err)
	}
	// An id the room holds is not added again: the stored one comes back.
	again, added, err := b.AppendWebRoomMessage(ctx, WebRoomMessage{Room: "main", ID: "m1", Time: t0, Text: "a retry"})
	if err != nil || added || again.Seq != 1 || again.Text != "**hi**" {
		t.Fatalf("a known id = %+v, %v, %v", again, added, err)
	}
	if _, _, err := a.AppendWebRoomMessage(ctx, WebRoomMessage{Room: "main"}); err == nil {
		t.Error("a message without an id was added")
	}

	all, err := b.WebRoomMessages(ctx, "main", 0, 100)
	if err != nil || len(all) != 4 {
		t.Fatalf("all = %+v, %v", all, err)
	}
	want := full
	want.Seq, want.Time = 1, time.UnixMilli(full.Time.UnixMilli())
	if all[0].Time.Equal(want.Time) {
		all[0].Time = want.Time
	}
	if all[0] != want {
		t.Errorf("read back %+v\nwant %+v", all[0], want)
	}
	for i, m := range all {
		if m.Seq != int64(i+1) || m.ID != fmt.Sprintf("m%d", i+1) {
			t.Errorf("message %d = seq %d id %s", i, m.Seq, m.ID)
		}
	}
	newest, err := a.WebRoomMessages(ctx, "main", 0, 2)
	if err != nil || len(newest) != 2 || newest[0].Seq != 3 || newest[1].Seq != 4 {
		t.Fatalf("newest 2 = %+v, %v", newest, err)
	}
	after, err := a.WebRoomMessages(ctx, "main", 2, 100)
	if err != nil || len(after) != 2 || after[0].Seq != 3 {
		t.Fatalf("after 2 = %+v, %v", after, err)
	}
	if none, err := a.WebRoomMessages(ctx, "main", 4, 100); err != nil || len(none) != 0 {
		t.Fatalf("after the newest = %+v, %v", none, err)
	}
}

// Two processes appending to one room at once never take the same seq
// and lose nothing: the one that lost the race tries again.
func TestWebRoomAppendConcurrent(t *testing.T) { drivers(t, testWebRoomAppendConcurrent) }

func testWebRoomAppendConcurrent(t *testing.T, c Config) {
	ctx := context.Background()
	stores := []*Store{open(t, c), open(t, c)}
	const each = 40
	var wg sync.WaitGroup
	errs := make(chan error, 4*each)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, _, err := stores[w%2].AppendWebRoomMessage(ctx, roomMsg("main", fmt.Sprintf("w%d-%d", w, i), t0)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, err := stores[0].WebRoomMessages(ctx, "main", 0, 1000)
	if err != nil || len(all) != 4*each {
		t.Fatalf("%d messages, want %d (%v)", len(all), 4*each, err)
	}
	for i, m := range all {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d: the sequence has a gap or a repeat", i, m.Seq)
		}
	}
}

// An import keeps the seqs a log had when they are past the room's
// newest, follows the newest otherwise, and adds each id once.
func TestWebRoomImport(t *testing.T) { drivers(t, testWebRoomImport) }

func testWebRoomImport(t *testing.T, c Config) {
	ctx := context.Background()
	a, b := open(t, c), open(t, c)
	var log []WebRoomMessage
	for i := range 5 {
		m := roomMsg("main", fmt.Sprintf("old%d", i), t0)
		m.Seq = int64(10 + i)
		log = append(log, m)
	}
	if n, older, err := a.ImportWebRoomMessages(ctx, log); err != nil || n != 5 || older != 0 {
		t.Fatalf("import = %d, %d, %v", n, older, err)
	}
	if n, older, err := b.ImportWebRoomMessages(ctx, log); err != nil || n != 0 || older != 0 {
		t.Fatalf("the same import on the other instance = %d, %d, %v; want nothing added", n, older, err)
	}
	// Another instance's log numbered from 1: its newer messages follow,
	// one older than the room's newest is skipped (it would show below).
	other := []WebRoomMessage{roomMsg("main", "stale", t0.Add(-time.Minute)), log[4], roomMsg("main", "b1", t0.Add(time.Second))}
	other[0].Seq, other[2].Seq = 1, 2
	if n, older, err := b.ImportWebRoomMessages(ctx, other); err != nil || n != 1 || older != 1 {
		t.Fatalf("the other log = %d added, %d older, %v; want 1 and 1", n, older, err)
	}
	m, _, err := a.AppendWebRoomMessage(ctx, roomMsg("main", "new", t0.Add(time.Minute)))
	if err != nil || m.Seq != 16 {
		t.Fatalf("the next post = %+v, %v; want seq 16", m, err)
	}
	all, err := a.WebRoomMessages(ctx, "main", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range all {
		got = append(got, fmt.Sprintf("%d:%s", m.Seq, m.ID))
	}
	if want := "[10:old0 11:old1 12:old2 13:old3 14:old4 15:b1 16:new]"; fmt.Sprint(got) != want {
		t.Errorf("room = %v, want %s", got, want)
	}
}

// Trimming keeps the newest messages of one room and leaves the others.
func TestWebRoomTrim(t *testing.T) { drivers(t, testWebRoomTrim) }

func testWebRoomTrim(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	for i := range 30 {
		for _, room := range []string{"main", "team"} {
			if _, _, err := s.AppendWebRoomMessage(ctx, roomMsg(room, fmt.Sprint(i), t0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := s.TrimWebRoom(ctx, "main", 10); err != nil || n != 20 {
		t.Fatalf("trim = %d, %v; want 20 removed", n, err)
	}
	if n, err := s.TrimWebRoom(ctx, "main", 10); err != nil || n != 0 {
		t.Fatalf("trim again = %d, %v", n, err)
	}
	main, _ := s.WebRoomMessages(ctx, "main", 0, 100)
	if len(main) != 10 || main[0].Seq != 21 || main[9].Seq != 30 {
		t.Fatalf("main kept %d messages from seq %d", len(main), main[0].Seq)
	}
	if team, _ := s.WebRoomMessages(ctx, "team", 0, 100); len(team) != 30 {
		t.Errorf("trimming main took team to %d messages", len(team))
	}
	if n, err := s.TrimWebRoom(ctx, "empty", 10); err != nil || n != 0 {
		t.Errorf("trimming an empty room = %d, %v", n, err)
	}
	if _, err := s.TrimWebRoom(ctx, "main", 0); err == nil {
		t.Error("trimming to nothing was accepted")
	}
	// Seqs go on from the newest after a trim.
	if m, _, err := s.AppendWebRoomMessage(ctx, roomMsg("main", "next", t0)); err != nil || m.Seq != 31 {
		t.Errorf("after a trim = %+v, %v", m, err)
	}
}
