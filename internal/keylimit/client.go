package keylimit

import (
	"net"
	"net/netip"
)

// Client returns the client an address belongs to: the address itself for
// IPv4 (also written as IPv4-mapped IPv6), its /64 for IPv6. An invalid
// address yields the zero prefix, one client for all such addresses.
func Client(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap()
	switch {
	case ip.Is4():
		return netip.PrefixFrom(ip, 32)
	case ip.Is6():
		p, _ := ip.WithZone("").Prefix(64)
		return p
	default:
		return netip.Prefix{}
	}
}

// RemoteClient returns the client of an http.Request's RemoteAddr
// ("host:port"), or the zero prefix when it is not an IP address.
func RemoteClient(remoteAddr string) netip.Prefix {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	return Client(ip)
}
