package ipc_test

import (
	"encoding/json"
	"testing"

	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/tools"
)

// FuzzDecodeRequest: any bytes either decode to a request of a known type
// with the file's id, or are refused with a reason; never both, never a
// panic.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"id":"a1","type":"fetch_media","args":{"mediaRef":"tg_AAAAAAAAAA"}}`,
		`{"version":1,"id":"a1","type":"list_media"}`,
		`{"version":1,"id":"a1","type":"send_message","args":{"text":"hi"}}`,
		`{"version":1,"id":"a1","type":"schedule_task","args":{"prompt":"x","schedule":{"in":"2h"}}}`,
		`{"version":1,"id":"a1","type":"remember","args":{"note":"x"}}`,
		`{"version":2,"id":"a1","type":"list_media"}`,
		`{"version":1,"id":"a1","type":"list_media","group":"other"}`,
		`{"version":1,"id":"a1"`, `[]`, `null`, ``, "\x00\xff",
	} {
		f.Add([]byte(s))
	}
	types := ipc.Types(tools.IPCTypes())
	f.Fuzz(func(t *testing.T, b []byte) {
		req, reason := ipc.DecodeRequest(b, "a1", types)
		if (req == nil) == (reason == "") {
			t.Fatalf("req=%v reason=%q: exactly one must be set", req, reason)
		}
		if req == nil {
			return
		}
		if req.ID != "a1" || req.Version != ipc.Version {
			t.Fatalf("accepted %+v", req)
		}
		if !types.Known(req.Type) {
			t.Fatalf("accepted unknown type %q", req.Type)
		}
		if _, err := json.Marshal(req); err != nil {
			t.Fatal(err)
		}
	})
}
