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
		{ipc.TypeGenerateImage, false},
		{ipc.TypeSpeak, false},
		{ipc.TypeGenerateVideo, false},
		{ipc.TypeCancelVideo, false},
		{ipc.TypeListVideos, true},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			b := []byte(fmt.Sprintf(`{"version":%d,"id":"a1","type":%q,"args":{}}`, ipc.Version, tc.typ))
			if req, reason := ipc.DecodeRequest(b, "a1", tools.IPCTypes()); req == nil {
				t.Errorf("refused: %s", reason)
			}
			if got := tools.IPCTypes().Repeatable(tc.typ); got != tc.idempotent {
				t.Errorf("Repeatable %v, want %v", got, tc.idempotent)
			}
		})
	}
}
