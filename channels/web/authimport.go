package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/botd-dev/botd/store"
)

// Before the database kept them, the channel kept its room links and live
// sessions in these files of its folder. A start imports them once and
// renames each to name+importedSuffix (kept as a record, never read
// again), so an upgrade logs nobody out and keeps every link working.
const (
	linksFile      = "links.json"
	sessionsFile   = "sessions.json"
	importedSuffix = ".imported"
	// maxImportBytes bounds what is read of either file: the old table's
	// thousand sessions are about 100 KB, and a file padded to the bound
	// costs a start a few tens of MB (TestRedTeamWebAuth).
	maxImportBytes = 2 << 20
)

// oldSession is a session as sessionsFile kept it, by nonce.
type oldSession struct {
	Role    string `json:"r"`
	Room    string `json:"room,omitempty"`
	Link    string `json:"link,omitempty"`
	Expires int64  `json:"exp"` // Unix seconds
	Issued  int64  `json:"iat"` // Unix nanoseconds
}

// importFiles moves the links, then the sessions, into the database.
// Importing is idempotent (a known id or nonce is left as it is, revoked
// or ended), so a crash before a rename only repeats it. A links file
// that cannot be read stops the start, as it did before: it holds links
// people use. A sessions file that cannot be parsed is set aside: losing
// it only logs people out.
func (a *auth) importFiles(ctx context.Context) error {
	raw, err := readImport(filepath.Join(a.dir, linksFile))
	if err != nil {
		return fmt.Errorf("room links: %w", err)
	}
	if raw != nil {
		var links []Link
		if err := json.Unmarshal(raw, &links); err != nil {
			return fmt.Errorf("room links %s: %w", filepath.Join(a.dir, linksFile), err)
		}
		for _, l := range links {
			if l.ID == "" || l.Room == "" || l.Token == "" {
				continue
			}
			if err := a.st.ImportRoomLink(ctx, store.RoomLink{ID: l.ID, Room: l.Room, Token: l.Token, Created: l.Created}); err != nil {
				return fmt.Errorf("import room links: %w", err)
			}
		}
		if err := markImported(filepath.Join(a.dir, linksFile)); err != nil {
			return err
		}
		a.log.Info("web room links moved into the database", "links", len(links), "file", linksFile+importedSuffix)
	}

	raw, err = readImport(filepath.Join(a.dir, sessionsFile))
	if err != nil {
		return fmt.Errorf("web sessions: %w", err)
	}
	if raw == nil {
		return nil
	}
	var m map[string]*oldSession
	if err := json.Unmarshal(raw, &m); err != nil {
		a.log.Warn("web sessions file unreadable; its sessions must log in again", "err", err)
		return markImported(filepath.Join(a.dir, sessionsFile))
	}
	now := a.now()
	nonces := make([]string, 0, len(m))
	for n, s := range m {
		if n != "" && s != nil && (s.Role == roleAdmin || s.Role == roleGuest) && now.Unix() < s.Expires {
			nonces = append(nonces, n)
		}
	}
	// Oldest first, so the bound on sessions ends them in the same order;
	// only the newest maxSessions, as many as the old table held, so a
	// file padded with sessions costs no more than a full one.
	sort.Slice(nonces, func(i, j int) bool { return m[nonces[i]].Issued < m[nonces[j]].Issued })
	nonces = nonces[max(0, len(nonces)-maxSessions):]
	imported := 0
	for _, n := range nonces {
		s := m[n]
		w := store.WebSession{Nonce: n, Role: s.Role, Room: s.Room, Link: s.Link, KeyID: a.keyID,
			Created: time.Unix(0, s.Issued), Expires: time.Unix(s.Expires, 0)}
		if s.Role == roleGuest {
			// A guest's link must still work: the old table kept sessions
			// whose link was gone and refused them at each request.
			l, ok, err := a.st.RoomLink(ctx, s.Link)
			if err != nil {
				return fmt.Errorf("import web sessions: %w", err)
			}
			if !ok || !l.Revoked.IsZero() || l.Room != s.Room {
				continue
			}
		}
		if err := a.st.ImportWebSession(ctx, w); err != nil {
			return fmt.Errorf("import web sessions: %w", err)
		}
		imported++
	}
	if err := markImported(filepath.Join(a.dir, sessionsFile)); err != nil {
		return err
	}
	a.log.Info("web sessions moved into the database", "sessions", imported, "file", sessionsFile+importedSuffix)
	return nil
}

// readImport returns the file at p, nil when there is none.
func readImport(p string) ([]byte, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file; move it away to start without it", p)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxImportBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxImportBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes; move it away to start without it", p, maxImportBytes)
	}
	return raw, nil
}

// markImported renames p to p+importedSuffix, replacing an older one.
func markImported(p string) error {
	if err := os.Rename(p, p+importedSuffix); err != nil {
		return fmt.Errorf("imported %s, but could not rename it: %w", p, err)
	}
	return nil
}
