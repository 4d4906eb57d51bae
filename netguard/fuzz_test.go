package netguard

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// FuzzCheckURL: CheckURL never panics, and a URL it accepts never has a
// host that some client would read as an inside address: not a literal in
// a range a second, independent classifier (net/netip's own predicates)
// calls private, and not a non-canonical IPv4 spelling (inet_aton's).
func FuzzCheckURL(f *testing.F) {
	for _, s := range spellings {
		f.Add("http://" + s.in + "/")
		f.Add(s.in)
	}
	f.Add("http://0x7f.0.0.1:80/")
	f.Add("https://[::ffff:7f00:1]/")
	g := New(Options{})
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		if g.CheckURL(u) != nil {
			return
		}
		host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if a, err := netip.ParseAddr(host); err == nil {
			if insideByNetip(a) {
				t.Fatalf("accepted %q whose host %s is inside", raw, a)
			}
			return
		}
		if a, ok := inetAton(host); ok {
			t.Fatalf("accepted %q whose host reads as %s to inet_aton", raw, a)
		}
		if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".internal") {
			t.Fatalf("accepted the inside name %q", raw)
		}
	})
}

func insideByNetip(a netip.Addr) bool {
	a = a.Unmap()
	return !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() ||
		a.IsMulticast() || a.IsUnspecified() || a.IsInterfaceLocalMulticast()
}

// inetAton reads an IPv4 address the permissive way C's inet_aton and
// browsers do: one to four parts, each decimal, octal (leading 0) or hex
// (0x), the last part filling the remaining bytes.
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			base, p = 16, p[2:]
			if p == "" {
				p = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" || strings.ContainsAny(p, "+-_") {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
