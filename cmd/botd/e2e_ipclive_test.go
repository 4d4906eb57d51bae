package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/tools"
)

// ipcListMedia asks the running botd of dir for list_media as group, the
// way `botd mcp --group` does (through data/ipc/<group>/), and fails the
// test unless it is answered. The deadline is a hang guard only: a host
// that serves the group answers at once.
func ipcListMedia(t *testing.T, dir, group string) tools.ListMediaResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := ipc.NewClient(ipc.GroupLayout(filepath.Join(dir, "data", "ipc"), group), tools.IPCTypes())
	defer c.Close()
	var res tools.ListMediaResult
	if err := c.Call(ctx, tools.ListMedia, tools.ListMediaArgs{}, &res); err != nil {
		t.Fatalf("list_media over IPC as %q: %v", group, err)
	}
	return res
}
