package main

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	_ "modernc.org/sqlite"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
)

// faultModel is an OpenAI-wire model whose answers say exactly which
// triggers they cover, so a lost or doubled answer shows: it answers
// "ANS q007 q012 ..." naming every trigger token (Qnnn) in the
// conversation not marked answered. A trigger that asks about its own photo ("Qnnn photo?")
// first gets fetch_media calls for those photos, and the answer then
// counts the images that came back ("img=N").
type faultModel struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests int
	fetches  int // fetch_media calls asked for
}

var (
	faultTrigger = regexp.MustCompile(`\bQ\d{3}\b`)
	faultPhotoQ  = regexp.MustCompile(`ref:(tg_[0-9A-Za-z]+)\][^<\]]*?\b(Q\d{3}) photo`)
)

func newFaultModel(t *testing.T) *faultModel {
	m := &faultModel{}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *faultModel) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	body := string(raw)
	m.mu.Lock()
	m.requests++
	m.mu.Unlock()
	// A little latency widens the windows a kill can land in.
	time.Sleep(30 * time.Millisecond)
	w.Header().Set("Content-Type", "text/event-stream")
	asked := newText(raw)
	if !strings.Contains(body, `"tool_call_id"`) {
		var refs []string
		for _, pm := range faultPhotoQ.FindAllStringSubmatch(asked, -1) {
			if !slices.Contains(refs, pm[1]) {
				refs = append(refs, pm[1])
			}
		}
		if len(refs) > 0 {
			m.mu.Lock()
			m.fetches += len(refs)
			m.mu.Unlock()
			faultToolCalls(w, refs)
			return
		}
	}
	var toks []string
	for _, q := range faultTrigger.FindAllString(asked, -1) {
		if q = strings.ToLower(q); !slices.Contains(toks, q) {
			toks = append(toks, q)
		}
	}
	sort.Strings(toks)
	text := "ANS " + strings.Join(toks, " ")
	if n := strings.Count(body, `"tool_call_id"`); n > 0 {
		text += fmt.Sprintf(" img=%d", strings.Count(body, "data:image/png;base64,"))
	}
	t, _ := json.Marshal(text)
	sse(w, "", `{"id":"c2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":`+string(t)+`},"finish_reason":null}]}`)
	sse(w, "", `{"id":"c2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	sse(w, "", `[DONE]`)
}

// faultToolCalls streams one fetch_media call per ref, in parallel.
func faultToolCalls(w io.Writer, refs []string) {
	for i, ref := range refs {
		args, _ := json.Marshal(fmt.Sprintf(`{"mediaRef":%q}`, ref))
		role := ""
		if i == 0 {
			role = `"role":"assistant",`
		}
		sse(w, "", fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{%s"tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":"fetch_media","arguments":%s}}]},"finish_reason":null}]}`, role, i, i, args))
	}
	sse(w, "", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	sse(w, "", `[DONE]`)
}

// updateLog sits in front of the fake Bot API and records which update
// ids getUpdates handed out (and how often) and which files were
// downloaded.
type updateLog struct {
	srv *httptest.Server

	mu     sync.Mutex
	handed map[int64]int
	files  map[string]int
	sends  []timedText // answers as they left the fake, in order
}

type timedText struct {
	at   time.Time
	text string
}

func newUpdateLog(t *testing.T, target string) *updateLog {
	u, _ := url.Parse(target)
	l := &updateLog{handed: map[int64]int{}, files: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // killed clients cancel their polls
	rp.ModifyResponse = func(resp *http.Response) error {
		p := resp.Request.URL.Path
		if strings.HasPrefix(p, "/file/") {
			l.mu.Lock()
			l.files[filepath.Base(p)]++
			l.mu.Unlock()
			return nil
		}
		lp := strings.ToLower(p)
		if !strings.HasSuffix(lp, "/getupdates") && !strings.HasSuffix(lp, "/sendmessage") {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		if err != nil {
			return nil
		}
		if strings.HasSuffix(lp, "/sendmessage") {
			var env struct {
				Result models.Message `json:"result"`
			}
			if json.Unmarshal(b, &env) == nil {
				l.mu.Lock()
				l.sends = append(l.sends, timedText{time.Now(), env.Result.Text})
				l.mu.Unlock()
			}
			return nil
		}
		var env struct {
			Result []models.Update `json:"result"`
		}
		if json.Unmarshal(b, &env) == nil {
			l.mu.Lock()
			for _, up := range env.Result {
				l.handed[up.ID]++
			}
			l.mu.Unlock()
		}
		return nil
	}
	l.srv = httptest.NewServer(rp)
	t.Cleanup(l.srv.Close)
	return l
}

func (l *updateLog) redelivered() (updates, extra int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.handed {
		if n > 1 {
			updates++
			extra += n - 1
		}
	}
	return
}

func (l *updateLog) downloads(fileID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.files[fileID]
}

const faultConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
agent:
  max_messages: 400
channels:
  telegram:
    enabled: true
    token: "%s"
    api_url: "%s"
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
  - {folder: work, name: Work, chat: "telegram:-200", requires_trigger: true}
`

// faultMsg is one message the test sends and what it expects of it.
type faultMsg struct {
	chat    int64
	id      int
	trigger string // "q007" when the message asks the assistant
	photo   string // file id when the message carries a photo
	asked   bool   // the trigger asks about its own photo
}

// faultScript is 200 messages over two groups: text, photos nobody asks
// about, and every ~10th message a trigger, every third trigger about
// its own photo (so fetch_media downloads it).
func faultScript(t *testing.T, tg *telegramtest.Server) ([]faultMsg, map[string][]byte) {
	var msgs []faultMsg
	data := map[string][]byte{}
	q := 0
	next := map[int64]int{}
	for i := 0; i < 200; i++ {
		m := faultMsg{chat: -100}
		if i%2 == 1 {
			m.chat = -200
		}
		if i%10 == 9 { // triggers take turns between the groups
			m.chat = []int64{-100, -200}[(i/10)%2]
		}
		next[m.chat]++
		m.id = next[m.chat]
		switch {
		case i%10 == 9:
			q++
			m.trigger = fmt.Sprintf("q%03d", q)
			if q%3 == 0 {
				m.photo, m.asked = fmt.Sprintf("asked-%03d", q), true
			}
		case i%7 == 3:
			m.photo = fmt.Sprintf("other-%03d", i)
		}
		if m.photo != "" {
			data[m.photo] = pngOf(t, 8+i%17, 8+i%5)
			tg.AddFile(telegramtest.File{ID: m.photo, Data: data[m.photo]})
		}
		msgs = append(msgs, m)
	}
	return msgs, data
}

func (m faultMsg) update() models.Update {
	text := fmt.Sprintf("message %d in %d", m.id, m.chat)
	if m.trigger != "" {
		text = "@Andy " + strings.ToUpper(m.trigger) + " what do you think?"
	}
	if m.photo == "" {
		return telegramtest.Text(telegramtest.Group(m.chat, "Group"), telegramtest.Person(42, "Ann"), m.id, text)
	}
	caption := "a photo"
	if m.asked {
		caption = "@" + telegramtest.BotUsername + " " + strings.ToUpper(m.trigger) + " photo?"
	}
	return photoUpdate(m.chat, m.id, m.photo, len(text)+100, caption)
}

// TestSIGKILLDuringMediaTraffic kills botd at random points while 200
// messages with photos and triggers flow in, restarts it each time, and
// then checks that nothing was lost, doubled, left half-written or stuck.
func TestSIGKILLDuringMediaTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end fault test")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("BOTD_FAULT_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	rng := rand.New(rand.NewSource(seed))
	kills := 5 + rng.Intn(4)
	t.Logf("seed %d (BOTD_FAULT_SEED to replay), %d kills", seed, kills)
	started := time.Now()

	dir := t.TempDir()
	tg := telegramtest.New(t)
	ul := newUpdateLog(t, tg.URL())
	model := newFaultModel(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(faultConfig, telegramtest.Token, ul.srv.URL, model.srv.URL))
	msgs, photos := faultScript(t, tg)

	// The chats talk at a steady pace while botd is killed and restarted.
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for _, m := range msgs {
			tg.Enqueue(m.update())
			time.Sleep(35 * time.Millisecond)
		}
	}()

	var logs []string
	var killedAt []time.Time
	for k := 0; k < kills; k++ {
		p := startBotd(t, dir, "run", "--config", "botd.yaml")
		// Half the kills land during start-up (migrations, recovery,
		// the first long poll), half while it is running.
		delay := time.Duration(50+rng.Intn(751)) * time.Millisecond
		if k%2 == 1 {
			p.waitLog(t, "botd running")
		}
		time.Sleep(delay)
		p.kill()
		killedAt = append(killedAt, time.Now())
		logs = append(logs, p.Logs())
		t.Logf("kill %d after %v (%s)", k+1, delay, map[bool]string{true: "running", false: "from exec"}[k%2 == 1])
	}
	<-fed

	final := startBotd(t, dir, "run", "--config", "botd.yaml")
	final.waitLog(t, "botd running")
	var triggers []faultMsg
	for _, m := range msgs {
		if m.trigger != "" {
			triggers = append(triggers, m)
		}
	}
	type answer struct {
		chat int64
		text string
	}
	covered := func() map[string][]answer {
		out := map[string][]answer{}
		for _, s := range tg.Sent() {
			if s.Method != "sendMessage" || !strings.HasPrefix(s.Text, "ANS") {
				continue
			}
			for _, tok := range strings.Fields(s.Text)[1:] {
				if strings.HasPrefix(tok, "q") {
					out[tok] = append(out[tok], answer{s.ChatID, s.Text})
				}
			}
		}
		return out
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(covered()) < len(triggers) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// Instead of waiting "long enough" for a wrong second answer, ask one
	// last question in each group and wait for its answer. A group's runs
	// are serial, each first delivers what the outbox owes and then reads
	// everything past the cursor, so a resend or a second run would have
	// come before it, and a trigger left past the cursor would be named
	// by the marker's answer too. The markers are checked like any other
	// trigger below.
	for _, chat := range []int64{-100, -200} {
		last := 0
		for _, m := range msgs {
			if m.chat == chat {
				last = max(last, m.id)
			}
		}
		marker := faultMsg{chat: chat, id: last + 1, trigger: fmt.Sprintf("q%03d", 900-chat/100)}
		tg.Enqueue(marker.update())
		msgs = append(msgs, marker)
		triggers = append(triggers, marker)
	}
	deadline = time.Now().Add(60 * time.Second)
	for len(covered()) < len(triggers) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// botd marks an answer sent only once Telegram has confirmed it, a
	// moment after the fake recorded it; a stop in that moment leaves the
	// row pending. Idle is an empty outbox.
	unsent := func() int {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "data", "botd.db")+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		n := -1
		_ = db.QueryRow(`SELECT COUNT(*) FROM agent_outbox WHERE status != 'sent'`).Scan(&n)
		return n
	}
	for unsent() != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	final.stop(t)
	logs = append(logs, final.Logs())

	// Read what botd left, from its database (botd has stopped).
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "data", "botd.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// Answers. The agent folds every message after the group's cursor
	// (max_messages here exceeds the whole run, so none is left out) into
	// one run and one answer, so every trigger must be named by exactly
	// one answer, in its own chat.
	cov := covered()
	answers := 0
	for _, s := range tg.Sent() {
		if s.Method == "sendMessage" {
			answers++
			if !strings.HasPrefix(s.Text, "ANS") {
				t.Errorf("unexpected message from the assistant: %v", s)
			}
		}
	}
	// Telegram has no idempotency key, so one window cannot be closed: the
	// send went out and the process died before recording it. Such a
	// resend is the same outbox row, with a kill between the two copies;
	// anything else (a second row, a regenerated answer) is a bug.
	outboxRows := map[string]int{}
	orows, err := db.Query(`SELECT text FROM agent_outbox`)
	if err != nil {
		t.Fatal(err)
	}
	for orows.Next() {
		var text string
		if err := orows.Scan(&text); err != nil {
			t.Fatal(err)
		}
		outboxRows[text]++
	}
	orows.Close()
	resent := map[string]bool{}
	ul.mu.Lock()
	sends := slices.Clone(ul.sends)
	ul.mu.Unlock()
	for i, a := range sends {
		for _, b := range sends[i+1:] {
			if a.text != b.text {
				continue
			}
			killed := slices.ContainsFunc(killedAt, func(k time.Time) bool { return k.After(a.at) && k.Before(b.at) })
			if outboxRows[a.text] != 1 || !killed {
				t.Errorf("answer %q sent twice: %d outbox rows, kill between the copies: %v", a.text, outboxRows[a.text], killed)
			}
			resent[a.text] = true
		}
	}
	if len(resent) > 0 {
		t.Logf("%d answers resent because a kill landed between the send and its record: %v", len(resent), resent)
	}
	// A live answer opens its message before anything is recorded (the
	// network gives the message id only then): a kill in that window
	// leaves a message no outbox row ever held, and the next run answers
	// its questions again, with any that came meanwhile. Such a message
	// never reached the outbox, and a kill came before its successor,
	// which covers every question it answered; anything else is a bug.
	unrecorded := map[string]bool{}
	for i, a := range sends {
		if outboxRows[a.text] != 0 || !strings.HasPrefix(a.text, "ANS ") {
			continue
		}
		for _, b := range sends[i+1:] {
			killed := slices.ContainsFunc(killedAt, func(k time.Time) bool { return k.After(a.at) && k.Before(b.at) })
			covers := true
			for _, q := range strings.Fields(a.text)[1:] {
				if strings.HasPrefix(q, "q") && !slices.Contains(strings.Fields(b.text), q) {
					covers = false
				}
			}
			if killed && covers && outboxRows[b.text] == 1 {
				unrecorded[a.text] = true
				break
			}
		}
	}
	if len(unrecorded) > 0 {
		t.Logf("%d live answers begun and never recorded because a kill landed right after their first send: %v", len(unrecorded), unrecorded)
	}
	imgs := 0
	for _, m := range triggers {
		got := slices.DeleteFunc(slices.Clone(cov[m.trigger]), func(a answer) bool { return unrecorded[a.text] && len(cov[m.trigger]) > 1 })
		all := got
		got = slices.Compact(slices.Clone(got))
		if len(got) == 1 && len(all) > 1 && !resent[got[0].text] {
			got = all
		}
		if len(got) != 1 {
			t.Errorf("trigger %s (chat %d msg %d) covered by %d answers, want 1: %v", m.trigger, m.chat, m.id, len(got), got)
			continue
		}
		if got[0].chat != m.chat {
			t.Errorf("trigger %s of chat %d answered in chat %d", m.trigger, m.chat, got[0].chat)
		}
		if m.asked {
			imgs++
			if !regexp.MustCompile(`img=[1-9]`).MatchString(got[0].text) {
				t.Errorf("trigger %s asked about its photo but the answer saw no image: %q", m.trigger, got[0].text)
			}
		}
	}

	// Messages: every one stored once, redeliveries included.
	stored := map[string]int{}
	rows, err := db.Query(`SELECT chat_id, id FROM messages WHERE from_me = 0`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var chat, id string
		if err := rows.Scan(&chat, &id); err != nil {
			t.Fatal(err)
		}
		stored[chat+"/"+id]++
	}
	rows.Close()
	var lost []string
	for _, m := range msgs {
		if stored[fmt.Sprintf("telegram:%d/%d", m.chat, m.id)] != 1 {
			lost = append(lost, fmt.Sprintf("%d/%d", m.chat, m.id))
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d messages not stored: %v", len(lost), len(msgs), lost)
	}
	if len(stored) != len(msgs) {
		t.Errorf("%d messages stored, want %d", len(stored), len(msgs))
	}
	var pending int
	if err := db.QueryRow(`SELECT COUNT(*) FROM agent_outbox WHERE status != 'sent'`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 0 {
		t.Errorf("%d answers left unsent in the outbox", pending)
	}

	// Media: downloads only for asked photos; the cache holds whole files.
	downloads := 0
	for id := range photos {
		n := ul.downloads(id)
		downloads += n
		if strings.HasPrefix(id, "other-") && n != 0 {
			t.Errorf("photo %s nobody asked about was downloaded %d times", id, n)
		}
	}
	mediaDir := filepath.Join(dir, "data", "media")
	if e, _ := os.ReadDir(filepath.Join(mediaDir, "tmp")); len(e) != 0 {
		t.Errorf("partial downloads left in data/media/tmp: %v", e)
	}
	blobs := checkContentAddressed(t, mediaDir, "")
	for id, b := range photos {
		if !strings.HasPrefix(id, "asked-") {
			continue
		}
		sum := sha256.Sum256(b)
		if _, err := os.Stat(filepath.Join(mediaDir, hex.EncodeToString(sum[:]))); err != nil {
			t.Errorf("asked photo %s is not in the cache: %v", id, err)
		}
	}
	for _, g := range []string{"family", "work"} {
		checkContentAddressed(t, filepath.Join(dir, "groups", g, "media", "inline"), ".png")
		entries, _ := os.ReadDir(filepath.Join(dir, "groups", g, "media"))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				t.Errorf("groups/%s/media holds a partial copy %s", g, e.Name())
			}
		}
	}

	// IPC: nothing waiting, nothing quarantined.
	var responses int
	for _, g := range []string{"family", "work"} {
		l := filepath.Join(dir, "data", "ipc", g)
		if e, _ := os.ReadDir(filepath.Join(l, "requests")); len(e) != 0 {
			t.Errorf("ipc/%s/requests not empty after a clean stop: %v", g, names(e))
		}
		if e, _ := os.ReadDir(filepath.Join(l, "failed")); len(e) != 0 {
			t.Errorf("ipc/%s/failed holds %v", g, names(e))
		}
		e, _ := os.ReadDir(filepath.Join(l, "responses"))
		responses += len(e)
		top, _ := os.ReadDir(l)
		for _, f := range top {
			if strings.HasPrefix(f.Name(), ".tmp-") {
				t.Logf("ipc/%s: half-written temp file %s left by a killed writer", g, f.Name())
			}
		}
	}

	redelivered, extra := ul.redelivered()
	var lostUpdates int
	for _, l := range logs {
		lostUpdates += strings.Count(l, "some updates lost")
	}
	model.mu.Lock()
	modelReqs, fetchCalls := model.requests, model.fetches
	model.mu.Unlock()
	t.Logf("seed %d: %d kills; %d messages stored of %d; %d triggers (%d about a photo), %d answers sent; "+
		"%d fetch_media calls, %d file downloads, %d cache blobs; %d updates redelivered (%d extra deliveries); "+
		"%d model requests; %d uncollected ipc responses (orphaned by kills); wall %v",
		seed, kills, len(stored), len(msgs), len(triggers), imgs, answers, fetchCalls, downloads, blobs,
		redelivered, extra, modelReqs, responses, time.Since(started).Round(time.Millisecond))
	if t.Failed() {
		t.Logf("sent: %v", tg.Sent())
	}
}

// checkContentAddressed checks that every file in dir hashes to its name
// (less ext) and returns how many there are.
func checkContentAddressed(t *testing.T, dir, ext string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if want := hex.EncodeToString(sum[:]) + ext; e.Name() != want {
			t.Errorf("%s/%s holds %d bytes hashing to %s: partial or corrupt", filepath.Base(dir), e.Name(), len(b), want)
		}
		n++
	}
	return n
}

func names(es []os.DirEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
