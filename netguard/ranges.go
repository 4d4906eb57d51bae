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
	"64:ff9b:1::/48", "it is a local-use NAT64 address (RFC 8215)",
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
	sixToFor = netip.MustParsePrefix("2002::/16")
	teredo   = netip.MustParsePrefix("2001::/32")
	global6  = netip.MustParsePrefix("2000::/3")
)

// classify returns why a is refused ("" when it is an ordinary public
// address) and, for a transition form, the embedded IPv4 address that
// decided it (so that an opened range can also open it).
func classify(a netip.Addr) (reason string, embedded netip.Addr) {
	if a.Is4() {
		return classify4(a), netip.Addr{}
	}
	if !a.Is6() {
		return "it is not an IP address", netip.Addr{}
	}
	b := a.As16()
	switch {
	case mapped.Contains(a):
		return embed("an IPv4-mapped address", v4At(b, 12))
	case siit.Contains(a):
		return embed("an IPv4-translated address", v4At(b, 12))
	case nat64.Contains(a):
		return embed("a NAT64 address", v4At(b, 12))
	case sixToFor.Contains(a):
		return embed("a 6to4 address", v4At(b, 2))
	case teredo.Contains(a):
		// Teredo carries the server's address as is and the client's
		// with every bit flipped; either being inside refuses it.
		if r, e := embed("a Teredo address (server)", v4At(b, 4)); r != "" {
			return r, e
		}
		var c [4]byte
		for i := range c {
			c[i] = b[12+i] ^ 0xff
		}
		return embed("a Teredo address (client)", netip.AddrFrom4(c))
	}
	for _, r := range v6Rules {
		if r.p.Contains(a) {
			return r.reason, netip.Addr{}
		}
	}
	if !global6.Contains(a) {
		return "it is outside the IPv6 global unicast range (2000::/3)", netip.Addr{}
	}
	// ISATAP puts an IPv4 address in the interface identifier
	// (::0:5efe:a.b.c.d, or ::200:5efe:a.b.c.d when it is global).
	if (b[8]|0x02) == 0x02 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		return embed("an ISATAP address", v4At(b, 12))
	}
	return "", netip.Addr{}
}

func v4At(b [16]byte, i int) netip.Addr { return netip.AddrFrom4([4]byte(b[i : i+4])) }

func embed(form string, v4 netip.Addr) (string, netip.Addr) {
	if r := classify4(v4); r != "" {
		return fmt.Sprintf("it is %s holding %s, which %s", form, v4, strings.TrimPrefix(r, "it ")), v4
	}
	return "", netip.Addr{}
}

func classify4(a netip.Addr) string {
	for _, r := range v4Rules {
		if r.p.Contains(a) {
			return r.reason
		}
	}
	return ""
}
