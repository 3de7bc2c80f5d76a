package app_test

import (
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
	page     = apptest.Page
)

func TestMain(m *testing.M) { apptest.Main(m) }
