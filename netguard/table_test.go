package netguard

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// spelling is one way to write a destination and whether the guard lets
// it through. A bare host is tried as http://HOST/; anything with "://"
// is used as the whole URL.
type spelling struct {
	in    string
	allow bool
}

var spellings = []spelling{
	// ordinary public destinations
	{"example.com", true}, {"EXAMPLE.COM", true}, {"example.com.", true}, {"www.example.co.uk", true},
	{"xn--bcher-kva.example", true}, {"my_host.example.org", true}, {"a-b.example.net", true},
	{"93.184.216.34", true}, {"8.8.8.8", true}, {"1.1.1.1", true}, {"223.255.255.255", true},
	{"100.63.255.255", true}, {"100.128.0.0", true}, {"172.15.255.255", true}, {"172.32.0.0", true},
	{"192.167.255.255", true}, {"192.169.0.0", true}, {"198.17.255.255", true}, {"198.20.0.0", true},
	{"169.253.255.255", true}, {"169.255.0.0", true}, {"11.0.0.0", true}, {"9.255.255.255", true},
	{"[2606:4700:4700::1111]", true}, {"[2001:4860:4860::8888]", true}, {"[2a00:1450:4001:80b::200e]", true},
	{"https://example.com:8443/path?q=1#frag", true}, {"HTTPS://Example.com/", true}, {"http://example.com:80/", true},
	{"http://[2606:4700:4700::1111]:8080/", true},
	// IPv4 embedded in IPv6 transition forms, public inside
	{"[::ffff:8.8.8.8]", true}, {"[::ffff:808:808]", true}, {"[64:ff9b::808:808]", true}, {"[64:ff9b::8.8.8.8]", true},
	{"[2002:808:808::1]", true}, {"[2001:0:808:808:0:0:f7f7:f7f7]", true}, {"[2001:4860:0:1::5efe:808:808]", true},
	{"[2001:4860:0:1:200:5efe:808:808]", true}, {"[::ffff:0:808:808]", true},
	// local-use NAT64 (RFC 8215) in each RFC 6052 layout, 8.8.8.8 inside
	{"[64:ff9b:1::808:808]", true}, {"[64:ff9b:1::8.8.8.8]", true}, {"[64:ff9b:1:0:8:808:800:0]", true},
	{"[64:ff9b:1:8:8:808::]", true}, {"[64:ff9b:1:808:8:800::]", true},

	// schemes, credentials, host forms
	{"ftp://example.com/", false}, {"file:///etc/passwd", false}, {"gopher://example.com/", false},
	{"javascript:alert(1)", false}, {"data:text/html,hi", false}, {"ws://example.com/", false},
	{"//example.com/", false}, {"http:example.com", false}, {"http:///path", false},
	{"http://user@example.com/", false}, {"http://user:s3cret@example.com/", false}, {"http://:@example.com/", false},
	{"http://example.com:0/", false}, {"http://example.com:65536/", false}, {"http://example.com:99999/", false},
	{"exa mple.com", false}, {"ex*ample.com", false}, {"example..com", false}, {".example.com", false},
	{strings.Repeat("a", 64) + ".com", false}, {"example.com..", false},

	// names that always mean inside
	{"localhost", false}, {"LOCALHOST", false}, {"localhost.", false}, {"LocalHost.", false},
	{"foo.localhost", false}, {"a.b.localhost", false}, {"printer.local", false}, {"printer.local.", false},
	{"db.internal", false}, {"metadata.google.internal", false}, {"METADATA.GOOGLE.INTERNAL.", false},
	{"localhost.localdomain", false}, {"metadata", false}, {"router.home.arpa", false},
	{"localhost:8080", false}, {"http://localhost:3000/admin", false},

	// loopback
	{"127.0.0.1", false}, {"127.0.0.2", false}, {"127.1.2.3", false}, {"127.255.255.254", false},
	{"127.0.0.1:8080", false}, {"127.0.0.1.", false},
	// non-canonical IPv4: octal, hex, decimal, shortened, leading zeros
	{"0177.0.0.1", false}, {"0177.0.0.01", false}, {"0x7f.0.0.1", false}, {"0x7f.1", false},
	{"0x7f000001", false}, {"2130706433", false}, {"017700000001", false}, {"127.1", false},
	{"127.0.1", false}, {"127.000.000.001", false}, {"010.0.0.1", false}, {"08.8.8.8", false},
	{"0x8.0x8.0x8.0x8", false}, {"134744072", false}, {"0x08080808", false}, {"8.8.8", false},
	{"8.8.8.8.8", false}, {"256.1.1.1", false}, {"1.2.3.256", false}, {"0", false}, {"0x", false},
	{"1.2.3.0x4", false}, {"a.0x10", false}, {"foo.123", false},
	// RFC 1918, CGNAT, link-local and metadata
	{"10.0.0.1", false}, {"10.255.255.255", false}, {"172.16.0.1", false}, {"172.31.255.255", false},
	{"192.168.0.1", false}, {"192.168.255.255", false}, {"100.64.0.1", false}, {"100.127.255.255", false},
	{"169.254.169.254", false}, {"169.254.0.1", false}, {"http://169.254.169.254/latest/meta-data/", false},
	// special-purpose and reserved
	{"0.0.0.0", false}, {"0.1.2.3", false}, {"192.0.0.1", false}, {"192.0.0.170", false},
	{"192.0.2.1", false}, {"198.51.100.7", false}, {"203.0.113.9", false}, {"198.18.0.1", false},
	{"198.19.255.255", false}, {"192.88.99.1", false}, {"192.31.196.1", false}, {"192.52.193.1", false},
	{"192.175.48.1", false}, {"224.0.0.1", false}, {"239.255.255.250", false}, {"240.0.0.1", false},
	{"250.1.2.3", false}, {"255.255.255.255", false},

	// IPv6 loopback, unspecified and their many spellings
	{"[::1]", false}, {"[0:0:0:0:0:0:0:1]", false}, {"[0000::0001]", false}, {"[::]", false},
	{"[::0]", false}, {"http://[::1]:8080/", false}, {"[::1%25eth0]", false}, {"[fe80::1%25eth0]", false},
	{"::1", false}, {"[::1", false}, {"[127.0.0.1]", false}, {"[1.2.3.4]", false},
	// IPv6 private, link-local, site-local, multicast, documentation, reserved
	{"[fc00::1]", false}, {"[fd12:3456:789a::1]", false}, {"[fdff:ffff::]", false}, {"[fe80::1]", false},
	{"[febf::1]", false}, {"[fec0::1]", false}, {"[feff::1]", false}, {"[ff02::1]", false},
	{"[ff05::2]", false}, {"[2001:db8::1]", false}, {"[2001:db8:ffff::]", false}, {"[3fff::1]", false},
	{"[100::1]", false}, {"[2001:2::1]", false}, {"[2001:10::1]", false}, {"[2001:20::1]", false},
	{"[2001:100::1]", false}, {"[5f00::1]", false}, {"[1000::1]", false}, {"[4000::1]", false},
	{"[e000::1]", false}, {"[::2]", false},
	// IPv4-mapped and -compatible
	{"[::ffff:127.0.0.1]", false}, {"[::ffff:7f00:1]", false}, {"[0:0:0:0:0:ffff:127.0.0.1]", false},
	{"[::ffff:10.0.0.1]", false}, {"[::ffff:169.254.169.254]", false}, {"[::ffff:a9fe:a9fe]", false},
	{"[::ffff:192.168.1.1]", false}, {"[::ffff:0.0.0.0]", false}, {"[::127.0.0.1]", false},
	{"[::8.8.8.8]", false}, {"[::ffff:0:127.0.0.1]", false}, {"[::ffff:0:a00:1]", false},
	// NAT64
	{"[64:ff9b::127.0.0.1]", false}, {"[64:ff9b::7f00:1]", false}, {"[64:ff9b::10.0.0.1]", false},
	{"[64:ff9b::a9fe:a9fe]", false}, {"[64:ff9b:1:ffff::1]", false},
	// local-use NAT64: refused when any RFC 6052 layout reads an inside address
	{"[64:ff9b:1::7f00:1]", false}, {"[64:ff9b:1::10.0.0.1]", false}, {"[64:ff9b:1::a9fe:a9fe]", false},
	{"[64:ff9b:1:7f00:0:100::]", false}, {"[64:ff9b:1:0:a:0:808:808]", false}, {"[64:ff9b:1::]", false},
	{"[64:ff9b:1:a9:fe:a9fe::]", false},
	// 6to4
	{"[2002:7f00:1::]", false}, {"[2002:7f00:0001::1]", false}, {"[2002:a00:1::1]", false},
	{"[2002:c0a8:101::1]", false}, {"[2002:a9fe:a9fe::]", false}, {"[2002::]", false},
	// Teredo: server as is, client XOR 0xffffffff
	{"[2001:0:7f00:1::]", false}, {"[2001:0:808:808:0:0:80ff:fffe]", false}, {"[2001:0:808:808::f5ff:fffe]", false},
	{"[2001:0:808:808:0:0:3f57:fefe]", false}, {"[2001::]", false}, {"[2001:0:808:808::5601:5601]", false},
	{"[2001:0:a00:1::f7f7:f7f7]", false}, {"[2001:0:c0a8:101::f7f7:f7f7]", false},
	// ISATAP with a private embedded address
	{"[2001:4860:0:1::5efe:a00:1]", false}, {"[2001:4860:0:1:200:5efe:7f00:1]", false},
	{"[2001:4860:0:1::5efe:192.168.0.1]", false}, {"[2001:4860:0:1:0:5efe:a9fe:a9fe]", false},
}

func TestSpellings(t *testing.T) {
	if len(spellings) < 150 {
		t.Fatalf("only %d spellings; the table must keep at least 150", len(spellings))
	}
	g := New(Options{})
	for _, s := range spellings {
		raw := s.in
		if !strings.Contains(raw, ":/") && !strings.Contains(raw, ":alert") && !strings.HasPrefix(raw, "data:") {
			raw = "http://" + raw + "/"
		}
		err := checkRaw(g, raw)
		if s.allow && err != nil {
			t.Errorf("%s: refused (%v), want allowed", raw, err)
		}
		if !s.allow {
			if err == nil {
				t.Errorf("%s: allowed, want refused", raw)
			} else if !errors.Is(err, ErrForbidden) {
				t.Errorf("%s: %v is not ErrForbidden", raw, err)
			} else if !strings.HasPrefix(err.Error(), "botd does not open ") || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: refusal %q must name the destination, never the password", raw, err)
			}
		}
	}
}

// checkRaw is what a caller does with a link: parse it, then check it.
// A link Go cannot even parse counts as refused.
func checkRaw(g *Guard, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return &Refusal{Dest: raw, Reason: "unparseable: " + err.Error()}
	}
	return g.CheckURL(u)
}

func TestRefusalReasons(t *testing.T) {
	g := New(Options{})
	for _, tt := range []struct{ raw, want string }{
		{"http://10.0.0.5/", "botd does not open 10.0.0.5: it is a private address (RFC 1918)"},
		{"http://169.254.169.254/", "botd does not open 169.254.169.254: it is a link-local address (where cloud metadata services live)"},
		{"http://[::ffff:127.0.0.1]/", "botd does not open ::ffff:127.0.0.1: it is an IPv4-mapped address holding 127.0.0.1, which is a loopback address (this machine)"},
		{"http://0x7f.1/", "botd does not open 0x7f.1: an IPv4 address must be written as four plain decimal numbers, like 93.184.216.34"},
		{"http://me:secret@example.com/", "botd does not open a link to example.com: it carries a user name or password"},
		{"http://printer.local/", "botd does not open printer.local: names ending in .local are inside botd's own network"},
		{"file:///etc/passwd", "botd does not open a file: link: only http and https links are opened"},
	} {
		if err := checkRaw(g, tt.raw); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.raw, err, tt.want)
		}
	}
}

func TestAllowPrivate(t *testing.T) {
	allow, err := ParsePrefixes([]string{"127.0.0.0/8", " 10.1.2.3 ", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	g := New(Options{AllowPrivate: allow})
	for _, tt := range []struct {
		raw   string
		allow bool
	}{
		{"http://127.0.0.1:8080/", true}, {"http://127.9.9.9/", true}, {"http://10.1.2.3/", true},
		{"http://[::ffff:127.0.0.1]/", true}, {"http://[64:ff9b::7f00:1]/", true}, {"http://[fd00::5]/", true},
		// an opened range never opens a name, a neighbour or a malformed literal
		{"http://localhost/", false}, {"http://10.1.2.4/", false}, {"http://0177.0.0.1/", false},
		{"http://127.1/", false}, {"http://[::1]/", false}, {"http://169.254.169.254/", false},
	} {
		if err := checkRaw(g, tt.raw); (err == nil) != tt.allow {
			t.Errorf("%s: err %v, want allowed %v", tt.raw, err, tt.allow)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // "" when it must fail
	}{
		{"10.0.0.0/8", "10.0.0.0/8"}, {"10.1.2.3/8", "10.0.0.0/8"}, {"127.0.0.1", "127.0.0.1/32"},
		{"::1", "::1/128"}, {"fd00::/8", "fd00::/8"}, {" 192.168.1.0/24 ", "192.168.1.0/24"},
		{"10.0.0.0/33", ""}, {"intranet", ""}, {"", ""}, {"fe80::1%eth0", ""}, {"0177.0.0.1", ""},
	} {
		got, err := ParsePrefixes([]string{tt.in})
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("%q: parsed as %v, want an error", tt.in, got)
		case tt.want != "" && (err != nil || got[0] != netip.MustParsePrefix(tt.want)):
			t.Errorf("%q: %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestTransitionForms: a Teredo address is judged by its client (the last
// 32 bits flipped), and its server field must be public too; a local-use
// NAT64 address by the IPv4 its RFC 6052 layouts read. An opened range
// opens such an address only when it opens every embedded address that
// refused it.
func TestTransitionForms(t *testing.T) {
	allow, err := ParsePrefixes([]string{"127.0.0.0/8", "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	closed, open := New(Options{}), New(Options{AllowPrivate: allow})
	for _, tt := range []struct {
		addr     string
		reason   string // "" when allowed with nothing opened
		inOpened bool   // allowed with 127.0.0.0/8 and 10.1.2.3 opened
	}{
		// Teredo: public server 8.8.8.8, client 127.0.0.1 / 169.254.169.254 / 10.1.2.3
		{"2001:0:808:808::80ff:fffe", "it is a Teredo address whose client is 127.0.0.1, which is a loopback address (this machine)", true},
		{"2001:0:808:808::5601:5601", "it is a Teredo address whose client is 169.254.169.254, which is a link-local address (where cloud metadata services live)", false},
		{"2001:0:808:808::f5fe:fdfc", "it is a Teredo address whose client is 10.1.2.3, which is a private address (RFC 1918)", true},
		// public client 8.8.8.8 behind a private server field: refused
		{"2001:0:a01:203::f7f7:f7f7", "it is a Teredo address whose server is 10.1.2.3, which is a private address (RFC 1918)", true},
		// both inside: the client names the reason; opening the server's
		// range alone does not open a loopback or private client
		{"2001:0:a01:203::3f57:fefe", "it is a Teredo address whose client is 192.168.1.1, which is a private address (RFC 1918)", false},
		{"2001:0:a01:203::80ff:fffe", "it is a Teredo address whose client is 127.0.0.1, which is a loopback address (this machine)", true},
		{"2001:0:a09:909::80ff:fffe", "it is a Teredo address whose client is 127.0.0.1, which is a loopback address (this machine)", false},
		{"2001:0:808:808::f7f7:f7f7", "", true},
		// local-use NAT64
		{"64:ff9b:1::808:808", "", true},
		{"64:ff9b:1:808:8:800::", "", true},
		{"64:ff9b:1::7f00:1", "it is a local-use NAT64 address (RFC 8215) whose /96 reading is 127.0.0.1, which is a loopback address (this machine)", true},
		{"64:ff9b:1::a9fe:a9fe", "it is a local-use NAT64 address (RFC 8215) whose /96 reading is 169.254.169.254, which is a link-local address (where cloud metadata services live)", false},
		{"64:ff9b:1:7f00:0:100::", "it is a local-use NAT64 address (RFC 8215) whose /48 reading is 127.0.0.1, which is a loopback address (this machine)", true},
		// public as a /96, 10.0.0.8 to a translator using a /64
		{"64:ff9b:1:0:a:0:808:808", "it is a local-use NAT64 address (RFC 8215) whose /64 reading is 10.0.0.8, which is a private address (RFC 1918)", false},
		{"64:ff9b:1::", "it is a local-use NAT64 address (RFC 8215) that holds no IPv4 address outside 0.0.0.0/8", false},
	} {
		a := netip.MustParseAddr(tt.addr)
		err := closed.CheckAddr(a)
		switch {
		case tt.reason == "" && err != nil:
			t.Errorf("%s: refused (%v), want allowed", tt.addr, err)
		case tt.reason != "" && (err == nil || err.Error() != "botd does not open "+tt.addr+": "+tt.reason):
			t.Errorf("%s: %v, want the reason %q", tt.addr, err, tt.reason)
		}
		if err := open.CheckAddr(a); (err == nil) != tt.inOpened {
			t.Errorf("%s with 127.0.0.0/8 and 10.1.2.3 opened: %v, want allowed %v", tt.addr, err, tt.inOpened)
		}
	}
}
