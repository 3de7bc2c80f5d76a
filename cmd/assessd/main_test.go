package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// runJSON runs the command line and decodes its JSON output.
func runJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("assessd %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("assessd %s printed non-JSON %q", strings.Join(args, " "), out.String())
	}
	return v
}

func TestAdminCommands(t *testing.T) {
	dbURL := storetest.NewURL(t)
	t.Setenv("DATABASE_URL", dbURL)

	org := runJSON(t, "admin", "org", "create", "--name", "Lycée Test", "--country", "FR", "--plan", "pro")
	orgID, _ := org["id"].(string)
	if !strings.HasPrefix(orgID, "org_") || org["settings"].(map[string]any)["aiRegion"] != "eu" {
		t.Fatalf("org create = %v", org)
	}
	user := runJSON(t, "admin", "user", "create", "--org", orgID, "--email", "t@lycee.test", "--name", "T", "--role", "teacher", "--password", "correct horse")
	userID, _ := user["id"].(string)
	if !strings.HasPrefix(userID, "usr_") {
		t.Fatalf("user create = %v", user)
	}
	key := runJSON(t, "admin", "apikey", "create", "--user", userID, "--name", "ci")
	if !strings.HasPrefix(key["key"].(string), "ak_") || !strings.HasPrefix(key["id"].(string), "key_") {
		t.Fatalf("apikey create = %v", key)
	}
	if got := runJSON(t, "admin", "apikey", "revoke", "--key", key["id"].(string)); got["revoked"] != true {
		t.Fatalf("apikey revoke = %v", got)
	}

	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"admin", "org", "create", "--name", "X", "--country", "XX"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "country") {
		t.Fatalf("invalid country: err = %v", err)
	}
	err = run(context.Background(), []string{"admin", "apikey", "create", "--user", "usr_01ARZ3NDEKTSV4RRFFQ69G5FAV"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown user: err = %v", err)
	}
	// A missing or unknown --org is named as such, for every command that
	// takes one, not reported as the foreign key an insert violates.
	for _, args := range [][]string{
		{"admin", "user", "create", "--org", "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--email", "u@x.test", "--name", "U"},
		{"admin", "user", "create", "--org", "not-an-id", "--email", "u@x.test", "--name", "U"},
		{"admin", "client", "create", "--org", "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--name", "C", "--redirect-uri", "https://app.example/cb"},
		{"admin", "service-account", "create", "--org", "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--name", "S"},
	} {
		err := run(context.Background(), args, &out, &errOut)
		if err == nil || !strings.HasPrefix(err.Error(), "org: no organization has the id") {
			t.Errorf("assessd %s: err = %v", strings.Join(args, " "), err)
		}
	}
	if err := run(context.Background(), []string{"admin", "user", "create", "--email", "u@x.test", "--name", "U"}, &out, &errOut); err == nil || err.Error() != "org: is required" {
		t.Errorf("user create without --org: err = %v", err)
	}
}

// TestAdminOrgUpdate sets, keeps across a plan change and removes an
// organization's request quota override through the command line, each
// command a process of its own reading what the last one wrote, and names
// every bad input on stderr with a failing exit.
func TestAdminOrgUpdate(t *testing.T) {
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	org := runJSON(t, "admin", "org", "create", "--name", "District 9", "--country", "US")
	id := org["id"].(string)
	quota := func(v map[string]any) string {
		q := v["quota"].(map[string]any)
		return fmt.Sprint(v["plan"], " ", q["requestsPerMinute"], " ", q["source"])
	}
	if got := quota(org); got != "free 300 plan" {
		t.Fatalf("org create: %v", org)
	}
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"--requests-per-minute", "100000"}, "free 100000 override"},
		{nil, "free 100000 override"}, // no flag: read, nothing changed
		{[]string{"--plan", "enterprise"}, "enterprise 100000 override"},
		{[]string{"--requests-per-minute", "0"}, "enterprise 6000 plan"},
		{[]string{"--plan", "pro", "--requests-per-minute", "1"}, "pro 1 override"},
	} {
		org := runJSON(t, append([]string{"admin", "org", "update", "--id", id}, step.args...)...)
		if got := quota(org); got != step.want || org["id"] != id || org["name"] != "District 9" || org["settings"] == nil {
			t.Fatalf("after %v: %v, want %s", step.args, org, step.want)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--id", "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--requests-per-minute", "10"}, `id: no organization has the id "org_01ARZ3NDEKTSV4RRFFQ69G5FAV"`},
		{[]string{"--requests-per-minute", "10"}, "id: is required"},
		{[]string{"--id", id, "--requests-per-minute", "-5"}, "requestsPerMinute: must be from 1 to 1000000, or 0 for the plan's quota"},
		{[]string{"--id", id, "--requests-per-minute", "1000001"}, "requestsPerMinute: must be from 1 to 1000000"},
		{[]string{"--id", id, "--requests-per-minute", "lots"}, "usage"},
		{[]string{"--id", id, "--plan", "gold"}, "plan: must be free, pro or enterprise"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"admin", "org", "update"}, tc.args...), &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) || out.Len() != 0 {
			t.Errorf("org update %v: err = %v, stdout %q; want an error with %q", tc.args, err, out.String(), tc.want)
		}
		if tc.want == "usage" && !strings.Contains(errOut.String(), `invalid value "lots" for flag -requests-per-minute`) {
			t.Errorf("org update %v: stderr %q", tc.args, errOut.String())
		}
	}
	// Nothing the bad commands said was written.
	if got := quota(runJSON(t, "admin", "org", "update", "--id", id)); got != "pro 1 override" {
		t.Fatalf("after the refused commands: %s", got)
	}
}

func TestUsageErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{nil, {"frobnicate"}, {"admin", "org"}, {"admin", "org", "create", "--nope"}} {
		if err := run(context.Background(), args, &out, &errOut); !errors.Is(err, errUsage) {
			t.Errorf("assessd %v: err = %v, want usage error", args, err)
		}
	}
	t.Setenv("DATABASE_URL", "")
	if err := run(context.Background(), []string{"migrate"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("migrate without database: err = %v", err)
	}
	t.Setenv("DATABASE_URL", "postgres://127.0.0.1:1/none")
	for _, setting := range []string{"acquire", "statement", "lock"} {
		for _, wait := range []string{"0s", "soon"} {
			err := run(context.Background(), []string{"serve", "--assessd-database-" + setting + "-timeout", wait}, &out, &errOut)
			if env := "ASSESSD_DATABASE_" + strings.ToUpper(setting) + "_TIMEOUT"; err == nil || !strings.Contains(err.Error(), env+" must be a duration") {
				t.Errorf("serve with a %s timeout of %q: err = %v", setting, wait, err)
			}
		}
	}
}

func TestServeShutsDownGracefully(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", devenvtest.Server(t).Address)
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	t.Setenv("REDIS_URL", redistest.URL(t))
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--assessd-addr", addr}, &bytes.Buffer{}, &bytes.Buffer{}) }()
	waitHealthy(t, "http://"+addr+"/healthz", done)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(35 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestAdminIdentityCommands(t *testing.T) {
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	org := runJSON(t, "admin", "org", "create", "--name", "Dev Org", "--country", "US")["id"].(string)

	conf := runJSON(t, "admin", "client", "create", "--org", org, "--name", "Gradebook", "--description", "Syncs grades",
		"--redirect-uri", "https://app.example/cb", "--redirect-uri", "http://localhost:3000/cb", "--scope", "profile", "--scope", "audit-logs:write")
	if !strings.HasPrefix(conf["clientId"].(string), "cli_") || !strings.HasPrefix(conf["clientSecret"].(string), "cs_") {
		t.Fatalf("client create = %v", conf)
	}
	pub := runJSON(t, "admin", "client", "create", "--org", org, "--name", "Mobile", "--redirect-uri", "https://app.example/cb", "--public")
	if _, ok := pub["clientSecret"]; ok || pub["public"] != true {
		t.Fatalf("public client create = %v", pub)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"admin", "client", "create", "--org", org, "--name", "X", "--redirect-uri", "http://evil.example/cb"}, &out, &errOut); err == nil {
		t.Fatal("a plain-http non-loopback redirect URI was accepted")
	}

	sa := runJSON(t, "admin", "service-account", "create", "--org", org, "--name", "sync", "--role", "teacher")
	if !strings.HasPrefix(sa["id"].(string), "sva_") {
		t.Fatalf("service-account create = %v", sa)
	}
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	file := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	added := runJSON(t, "admin", "service-account", "key", "add", "--org", org, "--service-account", sa["id"].(string), "--public-key", file)
	keyID, account := added["keyId"].(string), sa["id"].(string)
	if !strings.HasPrefix(keyID, "sak_") {
		t.Fatalf("service-account key add = %v", added)
	}
	if got := runJSON(t, "admin", "service-account", "key", "revoke", "--org", org, "--key", keyID); got["revoked"] != true {
		t.Fatalf("service-account key revoke = %v", got)
	}
	listed := runJSON(t, "admin", "service-account", "key", "list", "--org", org, "--service-account", account)
	keys := listed["keys"].([]any)
	if len(keys) != 1 || keys[0].(map[string]any)["keyId"] != keyID || keys[0].(map[string]any)["revoked"] != true {
		t.Fatalf("service-account key list = %v", listed)
	}
	if got := runJSON(t, "admin", "service-account", "disable", "--org", org, "--service-account", account); got["disabled"] != true {
		t.Fatalf("service-account disable = %v", got)
	}
	accounts := runJSON(t, "admin", "service-account", "list", "--org", org)["serviceAccounts"].([]any)
	if len(accounts) != 1 || accounts[0].(map[string]any)["id"] != account || accounts[0].(map[string]any)["disabled"] != true {
		t.Fatalf("service-account list = %v, want the disabled account", accounts)
	}
	if got := runJSON(t, "admin", "service-account", "enable", "--org", org, "--service-account", account); got["disabled"] != false {
		t.Fatalf("service-account enable = %v", got)
	}
	other := runJSON(t, "admin", "org", "create", "--name", "Other Org", "--country", "US")["id"].(string)
	if err := run(context.Background(), []string{"admin", "service-account", "disable", "--org", other, "--service-account", account}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("disabling another organization's service account: err = %v", err)
	}
	if err := run(context.Background(), []string{"admin", "service-account", "delete", "--org", other, "--service-account", account}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("deleting another organization's service account: err = %v", err)
	}
	if got := runJSON(t, "admin", "service-account", "delete", "--org", org, "--service-account", account); got["deleted"] != true {
		t.Fatalf("service-account delete = %v", got)
	}
	if accounts := runJSON(t, "admin", "service-account", "list", "--org", org)["serviceAccounts"].([]any); len(accounts) != 0 {
		t.Fatalf("service-account list after delete = %v, want none", accounts)
	}
}

// TestDevCommand runs `assessd dev` as `make run` does, with no
// DATABASE_URL: a private cluster, demo data, and a working API key.
func TestDevCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	t.Setenv("DATABASE_URL", "")
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv("REDIS_URL", "")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, in := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"dev", "--assessd-addr", addr}, in, io.Discard) }()
	var demo struct {
		URL    string `json:"url"`
		APIKey string `json:"apiKey"`
		Users  []struct {
			Email, Password, Role, APIKey string
		} `json:"users"`
		Class      struct{ ID string } `json:"class"`
		Assignment struct{ ID string } `json:"assignment"`
	}
	if err := json.NewDecoder(out).Decode(&demo); err != nil {
		t.Fatalf("dev printed no demo JSON: %v", err)
	}
	if len(demo.Users) != 3 || demo.Users[0].Password == "" {
		t.Fatalf("demo users = %+v", demo.Users)
	}
	req, _ := http.NewRequest("GET", demo.URL+"/me", nil)
	req.Header.Set("Authorization", "Bearer "+demo.APIKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /me with the printed key: %d", res.StatusCode)
	}
	// The printed student takes the printed class's open assignment with
	// their own key.
	if demo.Class.ID == "" || len(demo.Users) < 3 || demo.Users[2].Role != "student" {
		t.Fatalf("demo: %+v", demo)
	}
	req, _ = http.NewRequest("POST", demo.URL+"/assignments/"+demo.Assignment.ID+"/attempts", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+demo.Users[2].APIKey)
	req.Header.Set("Content-Type", "application/json")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the demo student starting the demo assignment: %d", res.StatusCode)
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dev returned %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("dev did not stop")
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestUnreachableDependenciesAreNamed: a command that cannot reach
// PostgreSQL or Temporal says which setting points where, and the
// driver's reason, not the API's "retry shortly".
func TestUnreachableDependenciesAreNamed(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none")
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	for _, args := range [][]string{{"serve"}, {"worker", "--region", "global"}, {"admin", "org", "create", "--name", "X", "--country", "US"}} {
		err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "PostgreSQL at DATABASE_URL does not answer") ||
			!strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "retry shortly") {
			t.Errorf("assessd %s without PostgreSQL: %v", strings.Join(args, " "), err)
		}
	}

	cfg := config{TemporalAddress: "127.0.0.1:1", TemporalNamespace: "default", TemporalCreateNamespace: "false"}
	opts, err := cfg.temporalOptions(discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := cfg.ensureNamespace(ctx, opts); err == nil || !strings.Contains(err.Error(), "temporal at 127.0.0.1:1 (TEMPORAL_ADDRESS)") {
		t.Errorf("without Temporal: %v", err)
	}
}
