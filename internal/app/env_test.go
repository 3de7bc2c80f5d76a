package app_test

import (
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
)

// The end-to-end tests of this package run on apptest's harness, under
// these short names.
type (
	env      = apptest.Env
	tenant   = apptest.Tenant
	response = apptest.Response
	oauthApp = apptest.OAuthApp
	browser  = apptest.Browser
	page     = apptest.Page
)

// TestMain silences the OIDC library's default-logger output.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}
