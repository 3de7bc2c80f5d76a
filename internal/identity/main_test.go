package identity_test

import (
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
)

func TestMain(m *testing.M) { apptest.Main(m) }
