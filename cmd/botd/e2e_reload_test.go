package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm/llmfake"
	"github.com/botd-dev/botd/store"
)

const reloadConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
channels:
  telegram:
    enabled: true
    token: "%s"
    api_url: "%s"
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s"}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: family, name: Family, chat: "telegram:-100"}
  - {folder: club, name: Club, chat: "telegram:-200"}
`

// question finds the question words ("q-…") people addressed to the
// assistant in a request; the scripted model answers "A:" and the newest,
// so each answer names its question. Its own answers ("A:q-…") do not
// count: they may be stored after a question that came meanwhile.
var question = regexp.MustCompile(`@[A-Za-z]+ (q-[a-z0-9-]+)`)

// reloadRig is a running botd over the fake Telegram and a scripted model,
// with its config file to edit.
type reloadRig struct {
	t     *testing.T
	dir   string
	cfg   string // the file's path
	tg    *telegramtest.Server
	model *llmfake.Server
	host  *proc
	id    int
}

// answerQuestion is the scripted model: "A:" and the newest question.
func answerQuestion(req llmfake.Request) llmfake.Reply {
	qs := question.FindAllStringSubmatch(string(req.Body), -1)
	if len(qs) == 0 {
		return llmfake.Reply{Text: "no question"}
	}
	return llmfake.Reply{Text: "A:" + qs[len(qs)-1][1]}
}

// newReloadRig starts botd over a model answering with reply (nil:
// answerQuestion).
func newReloadRig(t *testing.T, reply func(llmfake.Request) llmfake.Reply) *reloadRig {
	r := prepareReloadRig(t, reply)
	r.edit(func(string) string { return r.config() })
	r.start()
	return r
}

// prepareReloadRig is newReloadRig before the config is written and
// botd started.
func prepareReloadRig(t *testing.T, reply func(llmfake.Request) llmfake.Reply) *reloadRig {
	r := &reloadRig{t: t, dir: t.TempDir(), tg: telegramtest.New(t)}
	if reply == nil {
		reply = answerQuestion
	}
	r.model = llmfake.New(t, reply)
	r.cfg = filepath.Join(r.dir, "botd.yaml")
	return r
}

// config is the rig's first config.
func (r *reloadRig) config() string {
	return fmt.Sprintf(reloadConfig, telegramtest.Token, r.tg.URL(), r.model.URL+"/v1")
}

func (r *reloadRig) start() {
	r.host = startBotd(r.t, r.dir, "run", "--config", "botd.yaml")
	r.host.waitLog(r.t, "botd running")
}

// edit rewrites the config as an editor saves: a new file renamed over
// the old one.
func (r *reloadRig) edit(change func(old string) string) {
	r.t.Helper()
	old, _ := os.ReadFile(r.cfg)
	tmp := r.cfg + ".swp"
	writeFile(r.t, tmp, change(string(old)))
	if err := os.Rename(tmp, r.cfg); err != nil {
		r.t.Fatal(err)
	}
}

// replace is an edit changing one piece of text that must be there.
func (r *reloadRig) replace(from, to string) {
	r.t.Helper()
	r.edit(func(old string) string {
		if !strings.Contains(old, from) {
			r.t.Fatalf("%q is not in the config", from)
		}
		return strings.Replace(old, from, to, 1)
	})
}

// say sends text to chat as Ann and returns the message's id.
func (r *reloadRig) say(chat int64, text string) int {
	r.id++
	u := telegramtest.Text(telegramtest.Group(chat, fmt.Sprint("chat ", chat)), telegramtest.Person(42, "Ann"), r.id, text)
	u.Message.Date = int(time.Now().Unix())
	r.tg.Enqueue(u)
	return r.id
}

// answered waits for the answer to question q in chat.
func (r *reloadRig) answered(chat int64, q string) {
	r.t.Helper()
	testwait.Within(r.t, 60*time.Second, "the answer to "+q, func() bool {
		return slices.Contains(sentTo(r.tg, chat), "A:"+q)
	})
}

// logged waits until the log holds substr n times.
func (r *reloadRig) logged(substr string, n int) {
	r.t.Helper()
	testwait.Within(r.t, 60*time.Second, fmt.Sprintf("%d× %q in the log", n, substr), func() bool {
		return strings.Count(r.host.Logs(), substr) >= n
	})
}

// lastTrigger is the id of the message that last asked the group for an
// answer, as botd recorded it.
func (r *reloadRig) lastTrigger(folder string) string {
	r.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(r.dir, "data", "botd.db")+"?mode=ro")
	if err != nil {
		r.t.Fatal(err)
	}
	defer db.Close()
	st := &store.Store{DB: db}
	tr, ok, err := st.LastTrigger(context.Background(), folder)
	if err != nil {
		r.t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return tr.MessageID
}

// The config reloads while botd runs. SIGHUP with nothing changed is a
// reload that says so (and does not end botd). One group's trigger edited:
// that group answers the new trigger and no longer the old one, the other
// group is as it was. A broken edit (a syntax error, then an unknown key)
// is refused with `botd config check`'s own lines, and the running config
// keeps answering. A group added to the file is answered, no signal and no
// restart. A key that needs a restart is named in the one restart line.
func TestConfigReloadEndToEnd(t *testing.T) {
	r := newReloadRig(t, nil)
	r.say(-200, "@Andy q-club-before")
	r.answered(-200, "q-club-before")

	if err := r.host.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.logged("config read again: nothing changed", 1)
	if !strings.Contains(r.host.Logs(), "because=SIGHUP") {
		t.Fatalf("the reload does not say a signal asked for it:\n%s", r.host.Logs())
	}

	// One group's trigger, then SIGHUP (the watch may have taken it up
	// first: either way, one reload puts it in force).
	r.replace(`{folder: club, name: Club, chat: "telegram:-200"}`, `{folder: club, name: Club, chat: "telegram:-200", trigger: "@Bookie"}`)
	if err := r.host.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.logged("changed=groups[1].trigger", 1)
	r.say(-200, "@Bookie q-club-new-trigger")
	r.answered(-200, "q-club-new-trigger")
	newTrig := r.lastTrigger("club")
	r.say(-100, "@Andy q-family-unchanged")
	r.answered(-100, "q-family-unchanged")
	// The old trigger no longer asks: the family's marker below comes
	// after it in the same stream of updates, so once it is answered the
	// club's message was stored, and it recorded no trigger.
	r.say(-200, "@Andy q-club-old-trigger")
	r.say(-100, "@Andy q-family-marker")
	r.answered(-100, "q-family-marker")
	if got := r.lastTrigger("club"); got != newTrig {
		t.Fatalf("the club's last trigger is message %s, want %s: the old trigger still asks", got, newTrig)
	}
	if slices.Contains(sentTo(r.tg, -200), "A:q-club-old-trigger") {
		t.Fatal("the old trigger was answered")
	}

	// Broken edits: refused with config check's lines, the running config
	// stays.
	good, _ := os.ReadFile(r.cfg)
	for i, broken := range []struct{ name, from, to string }{
		{"a syntax error", "groups:\n", "groups: [\n"},
		{"an unknown key", "groups:\n", "groupz:\n  - {folder: x, chat: \"telegram:-9\"}\ngroups:\n"},
	} {
		r.replace(broken.from, broken.to)
		out, code := runCLI(t, r.dir, "config", "check", "--config", "botd.yaml")
		if code != 1 {
			t.Fatalf("%s: config check exit %d:\n%s", broken.name, code, out)
		}
		r.logged("config not reloaded: it has problems", i+1)
		logs := r.host.Logs()
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			if l := strings.ReplaceAll(strings.TrimSpace(line), `"`, `\"`); !strings.Contains(logs, l) {
				t.Errorf("%s: the refusal does not carry config check's line %q:\n%s", broken.name, l, logs)
			}
		}
		q := fmt.Sprintf("q-still-answering-%d", i)
		r.say(-200, "@Bookie "+q)
		r.answered(-200, q)
		r.edit(func(string) string { return string(good) })
	}

	// A group added in the file: the watch takes it up, no signal.
	r.replace("groups:\n", "groups:\n  - {folder: newcomers, name: Newcomers, chat: \"telegram:-300\"}\n")
	r.logged("group added by the config: answering there now", 1)
	r.say(-300, "@Andy q-newcomer")
	r.answered(-300, "q-newcomer")
	if _, err := os.Stat(filepath.Join(r.dir, "groups", "newcomers", "MEMORY.md")); err != nil {
		t.Errorf("the added group's workspace: %v", err)
	}
	// Its IPC folder is served too: an external MCP client reaches it.
	ipcListMedia(t, r.dir, "newcomers")

	// Access: a stranger gets a pairing code; with unknown_chats: ignore
	// read again, the next stranger gets nothing (the family's marker,
	// later in the same stream of updates, shows it was handled).
	r.say(-800, "@botd_test_bot q-stranger-before")
	testwait.Within(t, 60*time.Second, "the pairing reply", func() bool { return len(sentTo(r.tg, -800)) > 0 })
	r.replace("data_dir: ./data\n", "data_dir: ./data\naccess: {unknown_chats: ignore}\n")
	r.logged("changed=access.unknown_chats", 1)
	r.say(-900, "@botd_test_bot q-stranger-after")
	r.say(-100, "@Andy q-family-marker-2")
	r.answered(-100, "q-family-marker-2")
	if got := sentTo(r.tg, -900); len(got) != 0 {
		t.Fatalf("with unknown_chats: ignore a stranger was answered: %q", got)
	}

	// The group taken out of the file again: no longer answered (its
	// folder stays).
	r.replace("  - {folder: newcomers, name: Newcomers, chat: \"telegram:-300\"}\n", "")
	r.logged("changed=groups\n", 2)
	gone := r.say(-300, "@Andy q-newcomer-gone")
	r.say(-100, "@Andy q-family-marker-3")
	r.answered(-100, "q-family-marker-3")
	if r.lastTrigger("newcomers") == fmt.Sprint(gone) || slices.Contains(sentTo(r.tg, -300), "A:q-newcomer-gone") {
		t.Fatal("a group taken out of the config still asked for an answer")
	}
	if _, err := os.Stat(filepath.Join(r.dir, "groups", "newcomers", "MEMORY.md")); err != nil {
		t.Errorf("the removed group's folder: %v", err)
	}
	r.logged("ipc: group no longer served: it was removed while botd ran", 1)

	// Keys that need a restart: named, all in one line; botd goes on.
	r.replace("data_dir: ./data\n", "data_dir: ./data\nagent: {max_concurrent: 2}\nops: {listen: \"127.0.0.1:0\"}\n")
	r.logged("config changes that need a restart", 1)
	var restartLines []string
	for _, l := range strings.Split(r.host.Logs(), "\n") {
		if strings.Contains(l, "config changes that need a restart") {
			restartLines = append(restartLines, l)
		}
	}
	if len(restartLines) != 1 || !strings.Contains(restartLines[0], `keys="agent.max_concurrent, ops.listen"`) {
		t.Fatalf("restart lines = %q; want one naming agent.max_concurrent and ops.listen", restartLines)
	}
	r.say(-100, "@Andy q-after-restart-keys")
	r.answered(-100, "q-after-restart-keys")
	// botd reload asks the running botd and reports its word: the keys
	// still wait for a restart.
	out, code := runCLI(t, r.dir, "reload", "--config", "botd.yaml")
	if code != 0 || !strings.Contains(out, "needs a restart to take effect: agent.max_concurrent, ops.listen") {
		t.Fatalf("botd reload (exit %d):\n%s", code, out)
	}

	// The model: the next request names the new one.
	r.replace("name: gpt-4.1}", "name: gpt-4.1-mini}")
	r.logged("changed=llm.model.name", 1)
	r.say(-100, "@Andy q-new-model")
	r.answered(-100, "q-new-model")
	var last string
	for _, req := range r.model.Requests() {
		if strings.Contains(string(req.Body), "q-new-model") {
			last = string(req.Body)
		}
	}
	if !strings.Contains(last, `"model":"gpt-4.1-mini"`) {
		t.Fatalf("the request after the reload does not name the new model:\n%.600s", last)
	}

	// A broken file is not sent: botd reload lists config check's lines.
	r.replace("groups:\n", "groupz: 1\ngroups:\n")
	check, _ := runCLI(t, r.dir, "config", "check", "--config", "botd.yaml")
	out, code = runCLI(t, r.dir, "reload", "--config", "botd.yaml")
	if code != 1 || !strings.Contains(out, "not reloaded") || !strings.Contains(out, strings.Split(strings.TrimSpace(check), "\n")[1]) {
		t.Fatalf("botd reload of a broken file (exit %d):\n%s\nconfig check says:\n%s", code, out, check)
	}
	r.host.stop(t)
	r.edit(func(string) string { return string(good) })
	if out, code := runCLI(t, r.dir, "reload", "--config", "botd.yaml"); code != 1 || !strings.Contains(out, "not running") {
		t.Fatalf("botd reload with botd stopped (exit %d):\n%s", code, out)
	}
}

// A reload while a run is going: the run finishes with the model it
// started with (its second turn, after a tool call, still names it), the
// next run names the new one.
func TestReloadDuringARunEndToEnd(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	r := newReloadRig(t, func(req llmfake.Request) llmfake.Reply {
		// The question's first turn only: a later run carries it as an
		// earlier message, and its second turn the tool's result.
		if answerQuestion(req).Text == "A:q-inflight" && !strings.Contains(string(req.Body), `"tool_call_id"`) {
			close(entered)
			<-release
			return llmfake.Reply{Tool: "list_media", Args: `{}`}
		}
		return answerQuestion(req)
	})
	r.say(-100, "@Andy q-inflight")
	testwait.Within(t, 60*time.Second, "the run's first model call", func() bool {
		select {
		case <-entered:
			return true
		default:
			return false
		}
	})
	r.replace("name: gpt-4.1}", "name: gpt-4.1-mini}")
	r.logged("changed=llm.model.name", 1)
	close(release)
	r.answered(-100, "q-inflight")
	r.say(-100, "@Andy q-after")
	r.answered(-100, "q-after")
	var models []string
	for _, req := range r.model.Requests() {
		m := regexp.MustCompile(`"model":"([^"]+)"`).FindStringSubmatch(string(req.Body))
		if m != nil {
			models = append(models, m[1])
		}
	}
	if want := []string{"gpt-4.1", "gpt-4.1", "gpt-4.1-mini"}; !slices.Equal(models, want) {
		t.Fatalf("models asked = %q, want %q: the run in flight keeps its model, the next takes the new one", models, want)
	}
	r.host.stop(t)
}

// A Kubernetes ConfigMap mounted as a folder: botd.yaml is a link to
// ..data/botd.yaml, ..data a link to a folder of the version; an update
// writes a new folder and renames a new ..data link over the old one.
// The watch sees the swap, and the group the new version adds is answered.
func TestConfigReloadConfigMapSwapEndToEnd(t *testing.T) {
	r := prepareReloadRig(t, nil)
	version := func(name, content string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(r.dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(r.dir, name, "botd.yaml"), content)
		if err := os.Symlink(name, filepath.Join(r.dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(r.dir, "..data_tmp"), filepath.Join(r.dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_01", r.config())
	if err := os.Symlink("..data/botd.yaml", r.cfg); err != nil {
		t.Fatal(err)
	}
	r.start()
	version("..2026_02", strings.Replace(r.config(), "groups:\n", "groups:\n  - {folder: mapped, chat: \"telegram:-300\"}\n", 1))
	os.RemoveAll(filepath.Join(r.dir, "..2026_01"))
	r.logged("group added by the config: answering there now", 1)
	// The reload's own line comes after what it applied: waited for, not
	// read at once. No signal was sent, so only the watch can have asked.
	r.logged(`because="the file changed"`, 1)
	r.say(-300, "@Andy q-mapped")
	r.answered(-300, "q-mapped")
	r.host.stop(t)
}
