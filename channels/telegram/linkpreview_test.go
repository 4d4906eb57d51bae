package telegram

import (
	"encoding/json"
	"testing"

	"github.com/go-telegram/bot/models"
)

// The Bot API gives a bot no link preview content: a message with a link
// carries link_preview_options (the URL and display flags the sender
// chose), never a title or description, so botd shows the typed text
// alone rather than invent one. The update is the JSON Telegram sends.
func TestLinkPreviewOptionsAddNothing(t *testing.T) {
	const update = `{"update_id": 9001, "message": {"message_id": 500,
		"from": {"id": 7, "is_bot": false, "first_name": "Alice"},
		"chat": {"id": -1001234567890, "title": "Family", "type": "supergroup"},
		"date": 1740830400, "text": "pharmacy hours https://example.com/main-street",
		"entities": [{"type": "url", "offset": 15, "length": 31}],
		"link_preview_options": {"url": "https://example.com/main-street", "prefer_large_media": true}}}`
	var u models.Update
	if err := json.Unmarshal([]byte(update), &u); err != nil {
		t.Fatal(err)
	}
	if o := u.Message.LinkPreviewOptions; o == nil || o.URL == nil || *o.URL != "https://example.com/main-street" {
		t.Fatalf("link_preview_options not decoded: %+v", o)
	}
	h := newHarness(t)
	handle(h, u)
	got := h.sink.Inbounds()
	if len(got) != 1 {
		t.Fatalf("delivered %d", len(got))
	}
	if want := "pharmacy hours https://example.com/main-street"; got[0].Text != want {
		t.Errorf("text = %q, want the typed text alone, %q", got[0].Text, want)
	}
}
