package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/testkit/storetest"
)

// captureLogs sends the default logger, which libraries use, to a buffer
// for the test.
func captureLogs(t *testing.T) *bytes.Buffer {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &logs
}

// TestSecretsAreNeverPrinted runs help, a bad flag and failing connections
// with secret-bearing settings and looks for the secrets in everything
// printed or returned.
func TestSecretsAreNeverPrinted(t *testing.T) {
	secrets := map[string]string{
		"DATABASE_URL":                "postgres://assessd:pg-S3cret-1@127.0.0.1:1/assessd?sslmode=disable",
		"ASSESSD_DATABASE_DIRECT_URL": "postgres://assessd:pg-S3cret-2@127.0.0.1:1/assessd",
		"REDIS_URL":                   "redis://:redis-S3cret-3@127.0.0.1:1/0",
		"ASSESSD_AI_API_KEY":          "sk-ai-S3cret-4",
		"TEMPORAL_API_KEY":            "temporal-S3cret-5",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	logs := captureLogs(t)
	check := func(args []string, printed string) {
		t.Helper()
		for name, secret := range secrets {
			if i := strings.Index(secret, "S3cret"); strings.Contains(printed, secret[i:i+8]) {
				t.Errorf("assessd %s printed %s:\n%s", strings.Join(args, " "), name, printed)
			}
		}
	}
	runs := [][]string{
		{"serve", "-h"}, {"serve", "--nope"}, {"worker", "-h"}, {"worker", "--region", "eu"}, {"dev", "-h"},
		{"migrate"}, {"serve"}, {"admin", "org", "create", "--name", "X", "--country", "US"},
		{"admin", "org", "create", "--bogus"},
	}
	for _, args := range runs {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, &out, &errOut)
		printed := out.String() + errOut.String() + logs.String()
		if err != nil {
			printed += err.Error() + "\n" + redact(err.Error())
		}
		check(args, printed)
	}
	// A URL that cannot even be parsed, and Redis's URL in its own error.
	t.Setenv("DATABASE_URL", secrets["DATABASE_URL"]+"&sslmode=bogus")
	var errOut bytes.Buffer
	err := run(context.Background(), []string{"migrate"}, &bytes.Buffer{}, &errOut)
	if err == nil {
		t.Fatal("migrate with a bad URL succeeded")
	}
	check([]string{"migrate"}, err.Error()+errOut.String())
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	t.Setenv("REDIS_URL", "redis://:redis-S3cret-3@127.0.0.1:1/not-a-db")
	err = run(context.Background(), []string{"serve"}, &bytes.Buffer{}, &errOut)
	if err == nil {
		t.Fatal("serve with a bad Redis URL succeeded")
	}
	check([]string{"serve"}, err.Error()+errOut.String()+logs.String())
}

func TestShownSettings(t *testing.T) {
	tests := []struct{ env, value, want string }{
		{"DATABASE_URL", "postgres://u:pw@db:5432/x?sslmode=require", "postgres://u:xxxxx@db:5432/x?sslmode=require"},
		{"DATABASE_URL", "host=db user=u password='p w' dbname=x", "host=db user=u password=xxxxx dbname=x"},
		{"DATABASE_URL", "postgres://u@db/x", "postgres://u@db/x"},
		{"REDIS_URL", "rediss://:pw@cache:6380/1", "rediss://:xxxxx@cache:6380/1"},
		{"ASSESSD_AI_API_KEY", "sk-123", ""},
		{"TEMPORAL_API_KEY", "abc", ""},
		{"TEMPORAL_TLS_KEY", "/etc/tls/key.pem", "/etc/tls/key.pem"},
		{"ASSESSD_ADDR", "127.0.0.1:8080", "127.0.0.1:8080"},
	}
	for _, tt := range tests {
		if got := shown(tt.env, tt.value); got != tt.want {
			t.Errorf("shown(%s, %q) = %q, want %q", tt.env, tt.value, got, tt.want)
		}
	}
}

// TestAdminPrintsNoRouteLog: operator commands print their JSON and
// nothing of the OAuth provider they never serve.
func TestAdminPrintsNoRouteLog(t *testing.T) {
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	logs := captureLogs(t)
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"admin", "org", "create", "--name", "Quiet", "--country", "US"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if printed := logs.String() + errOut.String(); strings.Contains(printed, "registered route") {
		t.Fatalf("admin printed route registrations:\n%s", printed)
	}
}

// ASSESSD_WORKER_MEMORY_BYTES is a number of bytes with room for at least
// one answer's files.
func TestWorkerMemorySetting(t *testing.T) {
	for value, want := range map[string]int64{"268435456": 268435456, "33554432": 33554432, "33554431": 0, "256MiB": 0, "-1": 0, "": 0} {
		budget, err := (&config{WorkerMemoryBytes: value}).workerMemory()
		switch {
		case want == 0 && (err == nil || !strings.Contains(err.Error(), "ASSESSD_WORKER_MEMORY_BYTES")):
			t.Errorf("%q: %v, want an error naming the setting", value, err)
		case want != 0 && (err != nil || budget.Size() != want):
			t.Errorf("%q: %v, want a budget of %d", value, err, want)
		}
	}
}
