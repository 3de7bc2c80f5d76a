// Package sweeps_test sends seeded random input to the whole server: every
// operation of the OpenAPI document, the OAuth endpoints, the signed-in and
// the embedded pages, and concurrent writes over rows clients share. They
// are the longest tests, so they live apart from internal/app's and run at
// full length where a request costs least (hostileRounds).
package sweeps_test

import (
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
)

func TestMain(m *testing.M) { apptest.Main(m) }
