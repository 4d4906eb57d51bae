package generation

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"time"
)

// oggDuration reads the length of an OGG/Opus file from its last page's
// granule position (48 kHz samples for Opus) less the pre-skip of its
// OpusHead: no decoding, two small reads. Zero when the file is not one.
func oggDuration(f *os.File, size int64) time.Duration {
	head := make([]byte, 64)
	n, _ := f.ReadAt(head, 0)
	head = head[:n]
	i := bytes.Index(head, []byte("OpusHead"))
	if !bytes.HasPrefix(head, []byte("OggS")) || i < 0 || len(head) < i+12 {
		return 0
	}
	preSkip := int64(binary.LittleEndian.Uint16(head[i+10 : i+12]))
	const tailLen = 64 << 10 // an OGG page is at most ~64 KB
	off := max(size-tailLen, 0)
	tail := make([]byte, size-off)
	if _, err := f.ReadAt(tail, off); err != nil && err != io.EOF {
		return 0
	}
	j := bytes.LastIndex(tail, []byte("OggS"))
	if j < 0 || len(tail) < j+14 {
		return 0
	}
	granule := int64(binary.LittleEndian.Uint64(tail[j+6 : j+14]))
	if granule <= preSkip {
		return 0
	}
	return time.Duration(granule-preSkip) * time.Second / 48000
}
