package netguard

import (
	"fmt"
	"net/netip"
	"strings"
)

type rangeRule struct {
	p      netip.Prefix
	reason string
}

func rules(list ...string) []rangeRule {
	out := make([]rangeRule, 0, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		out = append(out, rangeRule{netip.MustParsePrefix(list[i]), list[i+1]})
	}
	return out
}

// v4Rules is the IANA IPv4 special-purpose registry plus multicast and the
// reserved 240/4: everything that is not an ordinary host on the public
// internet. Order matters only for the reason given (narrowest first).
var v4Rules = rules(
	"255.255.255.255/32", "it is the broadcast address",
	"0.0.0.0/8", `it is in 0.0.0.0/8 ("this network")`,
	"10.0.0.0/8", "it is a private address (RFC 1918)",
	"100.64.0.0/10", "it is a carrier-grade NAT address (RFC 6598)",
	"127.0.0.0/8", "it is a loopback address (this machine)",
	"169.254.0.0/16", "it is a link-local address (where cloud metadata services live)",
	"172.16.0.0/12", "it is a private address (RFC 1918)",
	"192.0.0.0/24", "it is reserved for IETF protocol assignments (RFC 6890)",
	"192.0.2.0/24", "it is a documentation address (TEST-NET-1)",
	"192.31.196.0/24", "it is a special-purpose address (AS112)",
	"192.52.193.0/24", "it is a special-purpose address (AMT)",
	"192.88.99.0/24", "it is the deprecated 6to4 relay range",
	"192.168.0.0/16", "it is a private address (RFC 1918)",
	"192.175.48.0/24", "it is a special-purpose address (AS112 direct delegation)",
	"198.18.0.0/15", "it is a benchmarking address (RFC 2544)",
	"198.51.100.0/24", "it is a documentation address (TEST-NET-2)",
	"203.0.113.0/24", "it is a documentation address (TEST-NET-3)",
	"224.0.0.0/4", "it is a multicast address",
	"240.0.0.0/4", "it is a reserved address (240.0.0.0/4)",
)

// v6Rules are the IPv6 ranges refused outright. The transition forms that
// embed an IPv4 address are handled in classify before these.
var v6Rules = rules(
	"::/128", "it is the unspecified address",
	"::1/128", "it is the loopback address (this machine)",
	"::/96", "it is a deprecated IPv4-compatible address",
	"100::/64", "it is a discard-only address (RFC 6666)",
	"2001:2::/48", "it is a benchmarking address (RFC 5180)",
	"2001:10::/28", "it is an ORCHID address (RFC 4843)",
	"2001:20::/28", "it is an ORCHIDv2 address (RFC 7343)",
	"2001:db8::/32", "it is a documentation address (RFC 3849)",
	"2001::/23", "it is reserved for IETF protocol assignments (RFC 2928)",
	"3fff::/20", "it is a documentation address (RFC 9637)",
	"5f00::/16", "it is a segment-routing address (RFC 9602)",
	"fc00::/7", "it is a unique local address (the IPv6 private range)",
	"fe80::/10", "it is a link-local address",
	"fec0::/10", "it is a site-local address",
	"ff00::/8", "it is a multicast address",
)

var (
	mapped   = netip.MustParsePrefix("::ffff:0:0/96")
	siit     = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64    = netip.MustParsePrefix("64:ff9b::/96")
	localUse = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFor = netip.MustParsePrefix("2002::/16")
	teredo   = netip.MustParsePrefix("2001::/32")
	global6  = netip.MustParsePrefix("2000::/3")
	zeroNet  = netip.MustParsePrefix("0.0.0.0/8")
)

// reading is one IPv4 address a transition form may stand for, and what
// the form calls it.
type reading struct {
	form string
	v4   netip.Addr
}

// classify returns why a is refused ("" when it is an ordinary public
// address) and, for a transition form, every embedded IPv4 address that
// refused it: an opened range opens the address only when it opens each
// of them (CheckAddr).
func classify(a netip.Addr) (reason string, embedded []netip.Addr) {
	if a.Is4() {
		return classify4(a), nil
	}
	if !a.Is6() {
		return "it is not an IP address", nil
	}
	b := a.As16()
	switch {
	case mapped.Contains(a):
		return judge(reading{"an IPv4-mapped address holding", v4At(b, 12)})
	case siit.Contains(a):
		return judge(reading{"an IPv4-translated address holding", v4At(b, 12)})
	case nat64.Contains(a):
		// The well-known prefix exists only as a /96 (RFC 6052 2.1).
		return judge(reading{"a NAT64 address holding", v4At(b, 12)})
	case localUse.Contains(a):
		return judgeLocalNAT64(b)
	case sixToFor.Contains(a):
		return judge(reading{"a 6to4 address holding", v4At(b, 2)})
	case teredo.Contains(a):
		return judge(teredoReadings(b)...)
	}
	for _, r := range v6Rules {
		if r.p.Contains(a) {
			return r.reason, nil
		}
	}
	if !global6.Contains(a) {
		return "it is outside the IPv6 global unicast range (2000::/3)", nil
	}
	// ISATAP puts an IPv4 address in the interface identifier
	// (::0:5efe:a.b.c.d, or ::200:5efe:a.b.c.d when it is global).
	if (b[8]|0x02) == 0x02 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		return judge(reading{"an ISATAP address holding", v4At(b, 12)})
	}
	return "", nil
}

// teredoReadings reads a Teredo address (RFC 4380 4): bits 32-63 are the
// Teredo server's IPv4 as is, the last 32 bits the client's IPv4 with
// every bit flipped. The client is where a packet goes (a relay tunnels it
// to the client's mapped address), so it is judged first and names the
// reason. The server must be public too: RFC 4380 requires a Teredo server
// on a global IPv4 address, so a private server field is never a real
// Teredo peer, and a host that is itself a Teredo client sends its
// bubbles to that server address, i.e. into the private network.
func teredoReadings(b [16]byte) []reading {
	var c [4]byte
	for i := range c {
		c[i] = b[12+i] ^ 0xff
	}
	return []reading{
		{"a Teredo address whose client is", netip.AddrFrom4(c)},
		{"a Teredo address whose server is", v4At(b, 4)},
	}
}

// judgeLocalNAT64 reads an address in the local-use NAT64 prefix
// 64:ff9b:1::/48 (RFC 8215). The operator picks a /48, /56, /64 or /96
// inside it and the IPv4 sits where RFC 6052 2.2 puts it for that length
// (bits 64-71 skipped); the address alone does not say which length the
// network's translator uses, so every layout is read and every reading
// must be public. A reading in 0.0.0.0/8 is what the zero padding of the
// other layouts gives (64:ff9b:1::8.8.8.8 read as a /64 is 0.0.0.8); no
// router forwards to that range, so it cannot be a destination and is
// passed over, but at least one reading must be a real public address.
func judgeLocalNAT64(b [16]byte) (string, []netip.Addr) {
	const form = "a local-use NAT64 address (RFC 8215) whose"
	all := []reading{
		{form + " /96 reading is", v4At(b, 12)},
		{form + " /64 reading is", netip.AddrFrom4([4]byte{b[9], b[10], b[11], b[12]})},
		{form + " /56 reading is", netip.AddrFrom4([4]byte{b[7], b[9], b[10], b[11]})},
		{form + " /48 reading is", netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]})},
	}
	var real []reading
	for _, r := range all {
		if !zeroNet.Contains(r.v4) {
			real = append(real, r)
		}
	}
	if len(real) == 0 {
		return "it is a local-use NAT64 address (RFC 8215) that holds no IPv4 address outside 0.0.0.0/8", nil
	}
	return judge(real...)
}

func v4At(b [16]byte, i int) netip.Addr { return netip.AddrFrom4([4]byte(b[i : i+4])) }

// judge refuses a transition form when any IPv4 it may stand for is
// refused; the reason names the first such reading, and every refused
// reading is returned for CheckAddr's opened ranges.
func judge(readings ...reading) (reason string, embedded []netip.Addr) {
	for _, rd := range readings {
		r := classify4(rd.v4)
		if r == "" {
			continue
		}
		if reason == "" {
			reason = fmt.Sprintf("it is %s %s, which %s", rd.form, rd.v4, strings.TrimPrefix(r, "it "))
		}
		embedded = append(embedded, rd.v4)
	}
	return reason, embedded
}

func classify4(a netip.Addr) string {
	for _, r := range v4Rules {
		if r.p.Contains(a) {
			return r.reason
		}
	}
	return ""
}
