// Package startpages gives back the pages of botd's own binary that only
// its start touched.
//
// A Go program runs every linked package's init at start, scattered over
// the whole text and read-only data, and the kernel maps a 64 KiB window
// around each page it faults in. So a botd with only the web channel
// holds some 28 MB of its binary resident after start, code of networks it
// does not use included, though it runs a small part of it afterwards.
// Release unmaps those clean, read-only pages of the executable from the
// process (madvise MADV_DONTNEED); the page cache keeps them, and a page
// used again is mapped again on its next use, so nothing is lost but a
// minor fault. Mappings that hold a private copy of any page (relocated
// read-only data, anything writable) are left alone.
package startpages
