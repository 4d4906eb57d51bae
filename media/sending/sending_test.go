package sending_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
)

func TestSend(t *testing.T) {
	r := mediatest.New(t)
	var res tools.SendResult
	if err := mediatest.Call(t, r.Client("family"), tools.SendMessage, tools.SendMessageArgs{Text: "hello"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Chat != "telegram:-100" || len(res.MessageIDs) != 1 {
		t.Errorf("send result = %+v", res)
	}
	mediatest.WantCode(t, mediatest.Call(t, r.Client("family"), tools.SendMessage, tools.SendMessageArgs{Text: "psst", Chat: "telegram:-200"}, nil), tools.CodeForbidden)
	if err := mediatest.Call(t, r.Client("main"), tools.SendMessage, tools.SendMessageArgs{Text: "from main", Chat: "telegram:-200"}, &res); err != nil || res.Chat != "telegram:-200" {
		t.Fatalf("main group send to another chat: %v %+v", err, res)
	}
	mediatest.WantCode(t, mediatest.Call(t, r.Client("main"), tools.SendMessage, tools.SendMessageArgs{Text: "x", Chat: "telegram:999"}, nil), tools.CodeForbidden)
	mediatest.WantCode(t, mediatest.Call(t, r.Client("family"), tools.SendMessage, tools.SendMessageArgs{Text: " "}, nil), tools.CodeBadRequest)
	r.TG.FailSends(chantest.ErrBoom)
	mediatest.WantCode(t, mediatest.Call(t, r.Client("family"), tools.SendMessage, tools.SendMessageArgs{Text: "lost?"}, nil), tools.CodeSendFailed)
	r.TG.FailSends(nil)

	sent := r.TG.Sent()
	if len(sent) != 2 || sent[0].Chat != "telegram:-100" || sent[1].Text != "from main" {
		t.Errorf("sent = %+v", sent)
	}

	ws, _ := groups.EnsureWorkspace(r.GroupsDir, &groups.Group{Folder: "family"})
	img := mediatest.PNG(t, 4, 4)
	os.WriteFile(filepath.Join(ws.Root, "chart.png"), img, 0o600)
	if err := mediatest.Call(t, r.Client("family"), tools.SendMedia, tools.SendMediaArgs{Path: "chart.png", Caption: "here"}, &res); err != nil {
		t.Fatal(err)
	}
	files := r.TG.Files()
	if len(files) != 1 || !bytes.Equal(files[0].Data, img) || files[0].MIME != "image/png" || files[0].Caption != "here" {
		t.Errorf("files = %+v", files)
	}
	for _, p := range []string{"../main/MEMORY.md", "/etc/passwd", "~/.ssh/id_rsa", "missing.png"} {
		mediatest.WantCode(t, mediatest.Call(t, r.Client("family"), tools.SendMedia, tools.SendMediaArgs{Path: p}, nil), tools.CodeBadRequest)
	}
}

// A local process (or the agent) that can write in the group folder tries
// to get a file from outside it sent to the chat.
func TestSendMediaCannotLeaveTheGroupFolder(t *testing.T) {
	r := mediatest.New(t)
	ws, err := groups.EnsureWorkspace(r.GroupsDir, &groups.Group{Folder: "family"})
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(r.Dir, "data", "botd.db")
	if err := os.Link(db, filepath.Join(ws.Root, "db.png")); err != nil {
		t.Skipf("hard link: %v", err)
	}
	err = mediatest.Call(t, r.Client("family"), tools.SendMedia, tools.SendMediaArgs{Path: "db.png"}, nil)
	mediatest.WantCode(t, err, tools.CodeBadRequest)
	if !strings.Contains(err.Error(), "hard links") {
		t.Errorf("refusal does not say why: %v", err)
	}
	if files := r.TG.Files(); len(files) != 0 {
		t.Fatalf("a hard link to the database was sent: %d files", len(files))
	}
}

// The file is swapped for a link to a secret after botd checked it and
// before the channel reads it: the channel must send what was checked.
func TestSendMediaSwapAfterCheckSendsWhatWasChecked(t *testing.T) {
	r := mediatest.New(t)
	ws, err := groups.EnsureWorkspace(r.GroupsDir, &groups.Group{Folder: "family"})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(r.Dir, "secret.txt")
	os.WriteFile(secret, []byte("TOKEN=outside-the-group"), 0o600)
	chart := filepath.Join(ws.Root, "chart.png")
	img := mediatest.PNG(t, 4, 4)
	os.WriteFile(chart, img, 0o600)
	r.TG.BeforeUpload = func(channels.OutMedia) {
		os.Remove(chart)
		if err := os.Symlink(secret, chart); err != nil {
			t.Error(err)
		}
	}
	if err := mediatest.Call(t, r.Client("family"), tools.SendMedia, tools.SendMediaArgs{Path: "chart.png"}, nil); err != nil {
		t.Fatal(err)
	}
	files := r.TG.Files()
	if len(files) != 1 || !bytes.Equal(files[0].Data, img) {
		t.Fatalf("sent %q, want the checked image", files[0].Data)
	}
}
