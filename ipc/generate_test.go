package ipc_test

import (
	"fmt"
	"testing"

	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/tools"
)

// The host takes every generation request; only list_videos, which reads,
// may be carried out twice.
func TestGenerateTypes(t *testing.T) {
	cases := []struct {
		typ        string
		idempotent bool
	}{
		{tools.GenerateImage, false},
		{tools.Speak, false},
		{tools.GenerateVideo, false},
		{tools.CancelVideo, false},
		{tools.ListVideos, true},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			b := []byte(fmt.Sprintf(`{"version":%d,"id":"a1","type":%q,"args":{}}`, ipc.Version, tc.typ))
			if req, reason := ipc.DecodeRequest(b, "a1", tools.IPCTypes()); req == nil {
				t.Errorf("refused: %s", reason)
			}
			if got := ipc.Types(tools.IPCTypes()).Repeatable(tc.typ); got != tc.idempotent {
				t.Errorf("Repeatable %v, want %v", got, tc.idempotent)
			}
		})
	}
}
