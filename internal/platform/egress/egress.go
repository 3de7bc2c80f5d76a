// Package egress decides where assessd's outgoing requests to addresses
// that integrators chose may go (decision 0107): webhook deliveries, and an
// LTI platform's keys, login and token endpoints. Only public unicast
// addresses, checked when a URL is saved (its name resolved) and again for
// the address every request actually connects to, so that a DNS answer
// that changes after the check cannot reach an internal address.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/assessd/assessd/internal/platform/errs"
)

// Targets decides where requests may go.
type Targets struct {
	// AllowPrivate lifts the address rule and allows http
	// (ASSESSD_WEBHOOK_ALLOW_PRIVATE, local development and tests only).
	AllowPrivate bool
	// Resolver resolves endpoint hosts; nil is net.DefaultResolver.
	Resolver *net.Resolver
}

// blocked are the ranges no delivery may reach beyond what netip's
// predicates cover: CGNAT, IETF protocol assignments, benchmarking,
// reserved and NAT64 (which maps onto IPv4, internal ones included).
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// ErrForbiddenAddress is the reason a target address is refused.
var ErrForbiddenAddress = errors.New("the address is not a public unicast address")

// metadata are cloud instance-metadata and platform endpoints, which hold
// credentials: no delivery reaches them, AllowPrivate or not (AWS, GCP
// and Azure IMDS, AWS ECS task metadata, AWS IMDS over IPv6, Alibaba
// Cloud, Azure's wire server).
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
}

// allowed reports whether a request may connect to addr.
func (t Targets) allowed(addr netip.Addr) bool {
	addr = addr.Unmap()
	if slices.Contains(metadata, addr) {
		return false
	}
	if t.AllowPrivate {
		return true
	}
	if !addr.IsGlobalUnicast() || addr.IsPrivate() || addr.IsLoopback() || addr.IsLinkLocalUnicast() ||
		addr.IsMulticast() || addr.IsUnspecified() || addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return false
	}
	for _, p := range blocked {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// MaxURLLength bounds a target URL.
const MaxURLLength = 2048

// Check validates a target URL, the value of field: https (http only with
// AllowPrivate), no credentials or fragment, and a host whose every address
// is allowed.
func (t Targets) Check(ctx context.Context, field, raw string) error {
	if len(raw) > MaxURLLength {
		return errs.Invalid(field, fmt.Sprintf("must be at most %d characters", MaxURLLength))
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errs.Invalid(field, "must be an absolute URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && t.AllowPrivate:
	default:
		return errs.Invalid(field, "must use https")
	}
	if u.User != nil || u.Fragment != "" {
		return errs.Invalid(field, "must not carry credentials or a fragment")
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		if !t.allowed(addr) {
			return errs.Invalid(field, "must not point to a loopback, private, link-local, multicast or metadata address")
		}
		return nil
	}
	if t.AllowPrivate {
		return nil
	}
	r := t.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", strings.TrimSuffix(host, "."))
	if err != nil || len(addrs) == 0 {
		return errs.Invalid(field, "the host does not resolve")
	}
	for _, a := range addrs {
		if !t.allowed(a) {
			return errs.Invalid(field, "must not point to a loopback, private, link-local, multicast or metadata address")
		}
	}
	return nil
}

// Request limits: a target answers within requestTimeout, with headers of
// at most headerLimit bytes (net/http's default is 10 MiB, held for each
// request at once).
const (
	requestTimeout = 10 * time.Second
	headerLimit    = 64 << 10
)

// Client returns the HTTP client of requests to targets: it connects only
// to allowed addresses (checked on the connected address, after DNS), uses
// no proxy, follows no redirect and gives up after requestTimeout.
func (t Targets) Client() *http.Client {
	dialer := &net.Dialer{
		Timeout: 5 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !t.allowed(ap.Addr()) {
				return ErrForbiddenAddress
			}
			return nil
		},
	}
	if t.Resolver != nil {
		dialer.Resolver = t.Resolver
	}
	return &http.Client{
		Timeout: requestTimeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            dialer.DialContext,
			TLSHandshakeTimeout:    5 * time.Second,
			ResponseHeaderTimeout:  requestTimeout,
			MaxResponseHeaderBytes: headerLimit,
			MaxIdleConnsPerHost:    16,
			IdleConnTimeout:        90 * time.Second,
			ForceAttemptHTTP2:      true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
