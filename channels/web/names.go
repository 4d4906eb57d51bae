package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// adminSender is the sender id of the admin's posts (deliver).
const adminSender = "web:admin"

// adminDefaultName is the admin's name when the composer's is empty.
const adminDefaultName = "Admin"

// reservedNames no guest may take: they would pass for the admin, botd or
// a role.
var reservedNames = []string{adminDefaultName, "Owner", "botd", "Guest", "System"}

// nameTaken says why name may not be this session's in room, "" when it
// may: a reserved word, the assistant's name, a name the admin posted
// under in the room, or one another live session there holds. Names
// compare without case.
func (w *Web) nameTaken(ctx context.Context, room string, s *session, name string) (string, error) {
	for _, r := range append([]string{w.env.AssistantName}, reservedNames...) {
		if strings.EqualFold(name, r) {
			return fmt.Sprintf("%q is reserved; choose another name", name), nil
		}
	}
	if s.Role == roleGuest {
		used, err := w.o.Store.SenderNames(ctx, ChatID(room), adminSender)
		if err != nil {
			return "", err
		}
		for _, u := range used {
			if strings.EqualFold(name, u) {
				return fmt.Sprintf("%q is the name of this room's host; choose another name", name), nil
			}
		}
	}
	held, err := w.o.Store.WebRoomNames(ctx, room, s.Nonce, w.now())
	if err != nil {
		return "", err
	}
	for _, h := range held {
		if strings.EqualFold(name, h) {
			return fmt.Sprintf("%q is taken by someone else in this room; choose another name", name), nil
		}
	}
	return "", nil
}

// guestName is the name a guest chose for this session, "" before they
// chose one.
func (w *Web) guestName(ctx context.Context, s *session) (string, error) {
	return w.o.Store.WebSessionName(ctx, s.Nonce)
}

// setName is POST /r/{room}/name: a guest names themselves, once for the
// session (the room link's visit); the name then stays, and no one else
// in the room can take it. The admin names themselves per message, in
// the composer.
func (w *Web) setName(rw http.ResponseWriter, r *http.Request) {
	rm, s := w.authRoom(rw, r, false)
	if rm == nil {
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, 4<<10)
	if !w.auth.checkCSRF(r, s) {
		w.fail(rw, r, http.StatusForbidden, "missing or wrong CSRF token; reload the page")
		return
	}
	if s.Role != roleGuest {
		w.fail(rw, r, http.StatusBadRequest, "the host names themselves in the composer")
		return
	}
	name := cleanName(r.PostFormValue("name"))
	if name == "" {
		w.fail(rw, r, http.StatusBadRequest, "type the name the room should call you")
		return
	}
	if status, msg := w.claimName(r.Context(), rm.name, s, name); status != 0 {
		w.fail(rw, r, status, msg)
		return
	}
	if wantsJSON(r) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(map[string]string{"name": name})
		return
	}
	http.Redirect(rw, r, "/r/"+rm.name, http.StatusSeeOther)
}

// claimName makes name the guest's for this session, if no one else's:
// status 0 when it is, else the HTTP status and what to tell them.
func (w *Web) claimName(ctx context.Context, room string, s *session, name string) (status int, msg string) {
	failed := func(err error) (int, string) {
		w.log.Error("web room: name not set", "err", err)
		return http.StatusInternalServerError, "botd could not set the name; try again"
	}
	if had, err := w.guestName(ctx, s); err != nil {
		return failed(err)
	} else if had != "" {
		return http.StatusConflict, fmt.Sprintf("you are %q for this visit; a name cannot be changed", had)
	}
	why, err := w.nameTaken(ctx, room, s, name)
	if err != nil {
		return failed(err)
	}
	if why != "" {
		return http.StatusConflict, why
	}
	ok, err := w.o.Store.SetWebSessionName(ctx, s.Nonce, name, w.now())
	if err != nil {
		return failed(err)
	}
	if !ok {
		return http.StatusConflict, "your name is already set for this visit"
	}
	return 0, ""
}

// senderName is who a post is from: a guest's fixed name (an error when
// they have none yet), the admin's typed name unless a guest of the room
// holds it, or adminDefaultName.
func (w *Web) senderName(ctx context.Context, room string, s *session, typed string) (name string, status int, msg string) {
	if s.Role == roleGuest {
		n, err := w.guestName(ctx, s)
		if err != nil {
			w.log.Error("web room: guest name not read", "err", err)
			return "", http.StatusInternalServerError, "botd could not read your name; try again"
		}
		if n != "" {
			return n, 0, "" // fixed: what the form says is ignored
		}
		// The first post names the guest, as the name form would.
		if n = cleanName(typed); n == "" {
			return "", http.StatusBadRequest, "choose your name first"
		}
		if status, msg := w.claimName(ctx, room, s, n); status != 0 {
			return "", status, msg
		}
		return n, 0, ""
	}
	n := cleanName(typed)
	if n == "" {
		return adminDefaultName, 0, ""
	}
	if strings.EqualFold(n, w.env.AssistantName) {
		return "", http.StatusConflict, fmt.Sprintf("%q is the assistant's name; choose another", n)
	}
	held, err := w.o.Store.WebRoomNames(ctx, room, s.Nonce, w.now())
	if err != nil {
		w.log.Error("web room: names not read", "err", err)
		return "", http.StatusInternalServerError, "botd could not check the name; try again"
	}
	for _, h := range held {
		if strings.EqualFold(n, h) {
			return "", http.StatusConflict, fmt.Sprintf("%q is a guest's name in this room; choose another", n)
		}
	}
	return n, 0, ""
}

// roomHint is what an empty room says: how to reach the assistant there.
func (w *Web) roomHint(rm *room) string {
	g, ok := w.o.Groups.ByFolder(rm.folder)
	if ok && g.NeedsTrigger() {
		t := g.Trigger
		if t == "" {
			t = "@" + w.env.AssistantName
		}
		return fmt.Sprintf("No messages yet. Start a message with %s to ask the assistant; files you share are opened only when someone asks about them.", t)
	}
	return "No messages yet. The assistant answers every message here; files you share are opened only when it needs them."
}
