package groups

import (
	"fmt"
	"strings"
)

// Role is what a person may have botd do in a group: a member asks,
// fetches, searches and reads; an admin (groups[].admins) also changes
// the group's settings, schedules tasks and uses generation; an owner
// (access.owners) also approves chats and writes the global memory.
// Each tool states the role it needs (tools.Spec.Needs).
type Role int

// The roles, each allowed what the one before it is.
const (
	Member Role = iota
	Admin
	Owner
)

func (r Role) String() string {
	switch r {
	case Admin:
		return "admin"
	case Owner:
		return "owner"
	default:
		return "member"
	}
}

// Allows reports whether r may do what needs need.
func (r Role) Allows(need Role) bool { return r >= need }

// ValidateUserID checks the "<network>:<user id>" shape of an owner or an
// admin; the network is not checked against the built-in networks, so a
// config keeps working in a build without one.
func ValidateUserID(id string) error {
	net, user, ok := strings.Cut(id, ":")
	if !ok || net == "" || user == "" || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' }) {
		return fmt.Errorf("%q must look like <network>:<user id>, e.g. telegram:123456 or slack:U0123", id)
	}
	return nil
}

// UserID is the "<network>:<user id>" of sender in chat.
func UserID(chat, sender string) string {
	net, _, _ := strings.Cut(chat, ":")
	return net + ":" + sender
}

// HasAdmin reports whether id is one of the group's admins.
func (g *Group) HasAdmin(id string) bool {
	for _, a := range g.Settings.Admins {
		if a == id {
			return true
		}
	}
	return false
}
