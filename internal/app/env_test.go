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
	page     = apptest.Page
)

// auditEntry is apptest's Env.AuditEntry under the short name too.
var auditEntry = (*apptest.Env).AuditEntry

func TestMain(m *testing.M) { apptest.Main(m) }
