package pdf

import (
	"errors"
	"fmt"
	"io"
)

// What one read of a document may cost. A PDF is a program for its
// reader: a few kilobytes can ask for gigabytes of decoded data (filters
// stacked on filters, predictor rows of any width) or for the same large
// stream again and again. These bounds hold whatever the file says; a
// real 300-page book needs about a megabyte of decoding.
const (
	// MaxDecoded is the bytes all the streams of one Doc may decode to,
	// every filter stage counted: the work one read may do.
	MaxDecoded = 64 << 20
	// maxXrefStream and maxObjStm bound the streams that are held whole
	// in memory (page contents are streamed). Real object streams hold
	// a hundred or two objects, tens of kilobytes; a cross-reference
	// stream of a million objects is 7 MiB.
	maxXrefStream = 16 << 20
	maxObjStm     = 8 << 20
	// maxObjStmCache bounds the decoded object streams kept, in bytes:
	// a real file's all fit.
	maxObjStmCache = 8 << 20
	// maxFilters bounds a stream's filter chain: real files use one or
	// two, and every stage multiplies what a bomb can expand to.
	maxFilters = 4
	// maxPredictorRow bounds one row of a PNG predictor: real rows are
	// a few bytes (cross-reference streams) to tens of kilobytes (images).
	maxPredictorRow = 1 << 20
	// maxParsed bounds the elements of arrays and dictionaries parsed
	// from the file's objects (not page contents), parsed again after
	// the object cache dropped them counted again: what a file's objects
	// take in memory is ten to fifty times what they took in the file.
	// A 2000-page book parses a few hundred thousand.
	maxParsed = 2_000_000
	// xrefSlack is how many more objects than its size in bytes a file
	// may claim: every object takes at least a byte of the file.
	xrefSlack = 1024
	// ctxEvery is how many decoded bytes pass between looks at the
	// context.
	ctxEvery = 256 << 10
)

// ErrTooLarge marks a file that asks for more work than one read allows.
// Its errors are sentences a chat member can read.
var ErrTooLarge = errors.New("PDF too large")

// limitError says which bound a file met.
type limitError struct{ msg string }

func (e *limitError) Error() string        { return e.msg }
func (e *limitError) Is(target error) bool { return target == ErrTooLarge }

func tooLarge(format string, a ...any) error {
	return &limitError{msg: fmt.Sprintf(format, a...)}
}

// overBudget is the error of a document past MaxDecoded.
func overBudget() error {
	return tooLarge("this PDF decodes to more than %d MB of data, more than botd reads for one file", mb(MaxDecoded))
}

func mb(n int64) int64 { return n >> 20 }

// spend counts n decoded bytes against the document's budget and looks at
// the context now and then. Past the budget the document is done for:
// every later stream fails at once with the same error.
func (d *Doc) spend(n int) error {
	before := d.decoded
	d.decoded += int64(n)
	if d.decoded > MaxDecoded && d.fatal == nil {
		d.fatal = overBudget()
	}
	if d.fatal != nil {
		return d.fatal
	}
	if before/ctxEvery != d.decoded/ctxEvery {
		return d.ctx.Err()
	}
	return nil
}

// stopped is why no more of the document can be read: its budget is
// spent, or the context ended.
func (d *Doc) stopped() error {
	if d.fatal != nil {
		return d.fatal
	}
	return d.ctx.Err()
}

// counted is one stage of a stream's decoding, counted by spend.
type counted struct {
	r io.Reader
	d *Doc
}

func (c *counted) Read(p []byte) (int, error) {
	if err := c.d.stopped(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	if e := c.d.spend(n); e != nil {
		return n, e
	}
	if err == io.EOF {
		// A flate stage ends its data at an error from below (a damaged
		// stream still gives what came before it): look again.
		if e := c.d.stopped(); e != nil {
			return n, e
		}
	}
	return n, err
}
