package web

import (
	"context"
	"fmt"
	"net/http"

	"github.com/botd-dev/botd/channels"
)

var _ channels.Reactor = (*Web)(nil)

// reaction is the assistant's reaction on a room message as a page hears
// it; Emoji "" takes it off.
type reaction struct {
	ID    string `json:"id"`
	Emoji string `json:"emoji"`
}

// React implements channels.Reactor: every open page of the room shows
// the emoji beside the message (until taken off). It is not kept: a page
// opened later does not show it.
func (w *Web) React(ctx context.Context, r channels.Reaction) error {
	rm, err := w.room(r.Chat)
	if err != nil {
		return err
	}
	if err := rm.mayShow(ctx); err != nil {
		return fmt.Errorf("web: %w", err)
	}
	rm.publish(event{kind: "reaction", reaction: reaction{ID: r.MessageID, Emoji: r.Emoji}})
	return nil
}

// decideChat approves or denies a chat waiting with a pairing code, from
// the dashboard's list of them.
func (w *Web) decideChat(rw http.ResponseWriter, r *http.Request) {
	s := w.adminPost(rw, r)
	if s == nil {
		return
	}
	verb := r.PathValue("verb")
	if w.o.Decide == nil || (verb != "approve" && verb != "deny") {
		w.fail(rw, r, http.StatusNotFound, "no such action")
		return
	}
	said, err := w.o.Decide(r.Context(), r.PostFormValue("code"), verb == "approve")
	if err != nil {
		w.fail(rw, r, http.StatusBadRequest, err.Error())
		return
	}
	w.log.Info("web: pending chat decided on the dashboard", "action", verb, "result", said)
	http.Redirect(rw, r, "/admin#pending-chats", http.StatusSeeOther)
}
