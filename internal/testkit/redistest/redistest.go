// Package redistest gives tests an in-process Redis (miniredis), for tests
// in which Redis is only incidental: they then need no Redis server, in
// -short mode or otherwise.
package redistest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Client returns a client on a fresh in-process Redis; both stop when t
// ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// URL starts an in-process Redis, stopped when t ends, and returns its
// redis:// URL, for code configured through REDIS_URL.
func URL(t testing.TB) string {
	t.Helper()
	return "redis://" + miniredis.RunT(t).Addr() + "/0"
}
