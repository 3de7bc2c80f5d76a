// Package clientaddr finds the address of the client behind a request. A
// load balancer or reverse proxy terminates the connection, so the socket
// peer is the proxy; X-Forwarded-For then names the client, but only a
// proxy the operator trusts may be believed, since any client can send
// the header.
package clientaddr

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver resolves client addresses, believing X-Forwarded-For only from
// trusted proxies. The zero value trusts no proxy.
type Resolver struct {
	trusted []netip.Prefix
}

// Parse returns a Resolver trusting the comma-separated CIDRs (or single
// addresses) in list, as ASSESSD_TRUSTED_PROXIES holds them.
func Parse(list string) (*Resolver, error) {
	r := &Resolver{}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			a, aerr := netip.ParseAddr(item)
			if aerr != nil {
				return nil, fmt.Errorf("trusted proxy %q is neither a CIDR nor an address", item)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		r.trusted = append(r.trusted, p.Masked())
	}
	return r, nil
}

func (res *Resolver) isTrusted(a netip.Addr) bool {
	for _, p := range res.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Resolve returns the client address of r. When the socket peer is a
// trusted proxy, X-Forwarded-For is walked from its right end (the hop the
// proxy added) leftwards past further trusted proxies; the first untrusted
// hop is the client. Entries to its left were written by the client itself
// and are ignored. Otherwise the socket peer is the client.
func (res *Resolver) Resolve(r *http.Request) string {
	peer, ok := parseHop(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	if !res.isTrusted(peer) {
		return peer.String()
	}
	client := peer
	hops := forwardedHops(r.Header.Values("X-Forwarded-For"))
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			// A trusted proxy wrote something unreadable: believe no further.
			break
		}
		client = a
		if !res.isTrusted(a) {
			break
		}
	}
	return client.String()
}

// Middleware records each request's client address in its context, where
// From finds it.
func (res *Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), addrKey{}, res.Resolve(r))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

type addrKey struct{}

// From returns the client address Middleware recorded for r, or the
// socket peer when no middleware ran.
func From(r *http.Request) string {
	if a, ok := r.Context().Value(addrKey{}).(string); ok {
		return a
	}
	return (&Resolver{}).Resolve(r)
}

// forwardedHops splits X-Forwarded-For header lines, in order, into hops.
func forwardedHops(lines []string) []string {
	var hops []string
	for _, line := range lines {
		for _, h := range strings.Split(line, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hops = append(hops, h)
			}
		}
	}
	return hops
}

// parseHop reads an address as proxies and net/http write it: a bare IP,
// an IP with a port, or a bracketed IPv6 address with or without a port.
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a.Unmap().WithZone(""), true
	}
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}
