package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/botd-dev/botd/store"
)

// maxLogLine bounds one line of an old room log: a message is at most
// maxTextRunes of text and a few file records, far below it. A longer
// line is skipped, not read into memory.
const maxLogLine = 4 << 20

// importLog moves an older botd's room log (one JSON message a line, the
// newest keepMessages of it) into the database and renames it to
// p+importedSuffix, kept as a record and never read again. Importing is
// idempotent on message ids, so a crash before the rename only repeats
// it. Lines cut by a crash or too long are skipped, as the log's reader
// always did.
func (r *room) importLog(ctx context.Context, p string) error {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("room log: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return fmt.Errorf("room log: %w", err)
	} else if !st.Mode().IsRegular() {
		return fmt.Errorf("room log %s is not a regular file; move it away to start without it", p)
	}
	var msgs []Message
	lines, skipped := 0, 0
	err = eachLine(f, maxLogLine, func(line []byte) {
		var m Message
		if json.Unmarshal(line, &m) != nil || m.ID == "" {
			skipped++
			return
		}
		lines++
		msgs = append(msgs, m)
		if len(msgs) > 2*keepMessages {
			msgs = append(msgs[:0:0], msgs[len(msgs)-keepMessages:]...)
		}
	}, func() { skipped++ })
	if err != nil {
		return fmt.Errorf("room log %s: %w", p, err)
	}
	msgs = msgs[max(0, len(msgs)-keepMessages):]
	rows := make([]store.WebRoomMessage, 0, len(msgs))
	for _, m := range msgs {
		row, err := r.toRow(m)
		if err != nil {
			return fmt.Errorf("room log %s: %w", p, err)
		}
		rows = append(rows, row)
	}
	added, older, err := r.st.ImportWebRoomMessages(ctx, rows)
	if err != nil {
		return err
	}
	if err := markImported(p); err != nil {
		return err
	}
	r.log.Info("web room log moved into the database", "room", r.name, "messages", lines, "added", added,
		"older_than_the_room", older, "unreadable_lines", skipped, "file", p+importedSuffix)
	return nil
}

// eachLine calls line with every line of rd (without its newline) up to
// max bytes long, and tooLong for each longer one, which is skipped
// without being held.
func eachLine(rd io.Reader, max int, line func([]byte), tooLong func()) error {
	br := bufio.NewReaderSize(rd, 64<<10)
	var buf []byte
	over := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !over && len(buf)+len(chunk) <= max+1 {
			buf = append(buf, chunk...)
		} else {
			over, buf = true, buf[:0]
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		switch {
		case over:
			tooLong()
		case len(bytes.TrimSpace(buf)) > 0:
			line(bytes.TrimSuffix(buf, []byte("\n")))
		}
		buf, over = buf[:0], false
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
