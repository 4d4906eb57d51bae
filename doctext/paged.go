package doctext

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/botd-dev/botd/doctext/internal/pdf"
)

// unitText is what one page or slide gave.
type unitText struct {
	text  string
	cut   bool   // it had more than the budget left
	empty string // said in place of the text when there is none
	// glyphs drawn, and of those the ones whose letters are unknown (PDF
	// fonts that do not say what they show).
	glyphs, unmapped int
}

// paged reads the units asked for (pages, slides) one by one while the
// budget lasts. A unit that does not fit is left for the next call, unless
// it is the first: then it is shown cut, so that every call moves on.
func (d *doc) paged(total int, unit string, get func(i, budget int) (unitText, error)) (Result, []unitText, error) {
	want, err := d.req.clamp(total, unit)
	if err != nil {
		return Result{}, nil, err
	}
	var body strings.Builder
	var got []unitText
	var stopped string
	used := 0
	next := want.from
	for i := want.from; i <= want.to; i++ {
		if err := d.ctx.Err(); err != nil {
			return Result{}, nil, err
		}
		left := d.max - used
		if left <= 0 {
			break
		}
		u, err := get(i, left)
		if err != nil {
			// Past what one call may decode, the pages read so far are
			// the answer, and the rest is for the next call (which has a
			// budget of its own).
			if errors.Is(err, ErrTooLarge) && len(got) > 0 {
				stopped = fmt.Sprintf("Reading stopped before %s %d: %s.", unit, i, tooLargeReason(err))
				break
			}
			return Result{}, nil, err
		}
		if u.cut && len(got) > 0 {
			break
		}
		got = append(got, u)
		next = i + 1
		marker := fmt.Sprintf("--- %s %d ---\n", unit, i)
		body.WriteString(marker)
		text := u.text
		if strings.TrimSpace(text) == "" {
			text = u.empty
		}
		body.WriteString(text)
		if u.cut {
			fmt.Fprintf(&body, "\n[%s %d is cut here: it has more text than one answer holds]", unit, i)
		}
		body.WriteString("\n\n")
		used += utf8.RuneCountInString(marker) + utf8.RuneCountInString(text)
		if u.cut {
			break
		}
	}
	shown := span{want.from, next - 1}
	res := Result{Format: d.format, Unit: unit, Pages: total, Shown: shown.String()}
	attrs := []string{unit + "s", fmt.Sprintf("%s of %d", shown, total)}
	if u := unreadable(got, want.from, unit); u != "" {
		attrs = append(attrs, "unreadable", u)
	}
	var note string
	if next <= want.to {
		ask := span{next, min(want.to, next+len(got)-1)}
		res.More = fmt.Sprintf("pages: %q", ask.String())
		note = fmt.Sprintf("Shown: %ss %s of %d. For more, ask again with pages: %q.", unit, shown, total, ask.String())
	}
	var notes []string
	if stopped != "" {
		notes = append(notes, stopped)
	}
	if note != "" {
		notes = append(notes, note)
	}
	notes = append(notes, d.cutNote()...)
	res.Text = wrap(d.name, d.mime, attrs, strings.TrimSpace(body.String()), notes)
	return res, got, nil
}

// unreadable says how many of the characters of the units shown could
// not be read, and where, or "" when all could: text lost to fonts that
// do not say which letters they draw is never dropped silently.
func unreadable(got []unitText, from int, unit string) string {
	var glyphs, unmapped int
	first, last := 0, 0
	for i, u := range got {
		if u.unmapped == 0 {
			continue
		}
		if first == 0 {
			first = from + i
		}
		last = from + i
		glyphs += u.glyphs
		unmapped += u.unmapped
	}
	if unmapped == 0 || glyphs == 0 {
		return ""
	}
	pct := fmt.Sprintf("%d %%", unmapped*100/glyphs)
	if unmapped*100 < glyphs {
		pct = "under 1 %"
	}
	where := fmt.Sprintf("on %s %d", unit, first)
	if last != first {
		where = fmt.Sprintf("on %ss %d–%d", unit, first, last)
	}
	return fmt.Sprintf("%s of the characters %s could not be read (fonts that do not say which letters they show)", pct, where)
}

// tooLargeReason is the sentence of a limit error, without the prefix of
// ErrTooLarge.
func tooLargeReason(err error) string {
	return strings.TrimPrefix(err.Error(), ErrTooLarge.Error()+": ")
}

// maxPDFPageChars bounds the text of one page even when the budget is
// larger: no real page says more.
const maxPDFPageChars = 200_000

func (d *doc) pdf() (Result, error) {
	p, err := pdf.Open(d.ctx, d.f, d.size)
	if err != nil {
		if e := d.ctx.Err(); e != nil {
			return Result{}, e
		}
		if errors.Is(err, pdf.ErrTooLarge) {
			return Result{}, fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
		if errors.Is(err, pdf.ErrEncrypted) {
			return Result{}, fmt.Errorf("%w: %s", ErrEncrypted, strings.TrimPrefix(err.Error(), pdf.ErrEncrypted.Error()+": "))
		}
		return Result{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	noText, scanned := 0, 0
	res, got, err := d.paged(p.NumPages(), "page", func(i, budget int) (unitText, error) {
		info, err := p.PageText(d.ctx, i, min(budget, maxPDFPageChars))
		if err != nil {
			if d.ctx.Err() != nil {
				return unitText{}, d.ctx.Err()
			}
			if errors.Is(err, pdf.ErrTooLarge) {
				return unitText{}, fmt.Errorf("%w: %w", ErrTooLarge, err)
			}
			return unitText{empty: fmt.Sprintf("(page %d could not be read: %v)", i, err)}, nil
		}
		u := unitText{text: info.Text, cut: info.Cut, glyphs: info.Glyphs, unmapped: info.Unmapped}
		switch {
		case info.Text != "":
		case info.Glyphs > 0 && info.Unmapped == info.Glyphs:
			u.empty = "(the text of this page is drawn with fonts that do not say which letters they show: it cannot be read as text)"
		case info.Images > 0:
			u.empty = "(no text on this page, only images: a scanned page?)"
			noText++
			scanned++
		default:
			u.empty = "(no text on this page)"
			noText++
		}
		return u, nil
	})
	if err != nil {
		return Result{}, err
	}
	if noText == len(got) && len(got) > 0 {
		res.NoText = true
		if scanned > 0 {
			res.Text += fmt.Sprintf("\nThe PDF has no text layer on pages %s: it seems to be scanned, so its text can only be "+
				"read by looking at the pages as images.", res.Shown)
		} else {
			res.Text += fmt.Sprintf("\nThe PDF has no text on pages %s, and no images either: drawings only, or blank.", res.Shown)
		}
	}
	return res, nil
}
