package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// TestTypeScriptSDK runs the SDK's own tests (node --test) against this
// server; `make sdk` builds the SDK first.
func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	sdk, _ := filepath.Abs("../../sdk/typescript")
	if _, err := os.Stat(filepath.Join(sdk, "dist", "esm", "index.js")); err != nil {
		t.Skip("the SDK is not built: run make sdk")
	}
	if testing.Short() {
		t.Skip("runs Node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	cmd := exec.Command(node, "--test", "test/")
	cmd.Dir = sdk
	cmd.Env = append(os.Environ(),
		"ASSESSD_URL="+e.Srv.URL, "ASSESSD_API_KEY="+tn.Keys[tenancy.RoleOwner],
		"ASSESSD_CLIENT_ID="+a.Conf.ClientID, "ASSESSD_CLIENT_SECRET="+a.Conf.ClientSecret,
		"ASSESSD_REDIRECT_URI="+apptest.TestRedirect, "ASSESSD_LOGIN_EMAIL="+a.Email, "ASSESSD_LOGIN_PASSWORD="+a.Password)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("SDK tests failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
