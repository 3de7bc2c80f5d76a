package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/alicebob/miniredis/v2"

	"github.com/assessd/assessd/internal/devenv"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// dev runs the whole platform in one process: it uses DATABASE_URL and
// TEMPORAL_ADDRESS when set and otherwise starts a private PostgreSQL
// cluster and a Temporal dev server, migrates, runs both regions' grading
// workers, seeds a demo organization, prints how to reach it, and serves
// until interrupted. Webhook endpoints may be local (http, loopback)
// unless ASSESSD_WEBHOOK_ALLOW_PRIVATE says otherwise.
func dev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg config
	fs := cfg.newFlagSet("dev", stderr)
	if _, set := os.LookupEnv("ASSESSD_WEBHOOK_ALLOW_PRIVATE"); !set {
		// A developer's webhook receiver runs on this machine.
		if err := fs.Set("assessd-webhook-allow-private", "true"); err != nil {
			return err
		}
	}
	if err := cfg.parse(fs, args); err != nil {
		return err
	}
	log := cfg.logger(stderr)
	slog.SetDefault(log)
	if cfg.DatabaseURL == "" {
		log.Info("DATABASE_URL not set: starting a private PostgreSQL cluster")
		pg, err := devenv.StartPostgres(ctx, os.TempDir())
		if err != nil {
			return err
		}
		defer pg.Stop()
		cfg.DatabaseURL = pg.URL
	}
	if err := store.Migrate(ctx, cfg.directDatabaseURL()); err != nil {
		return err
	}
	if cfg.RedisURL == "" {
		log.Info("REDIS_URL not set: using an in-process Redis")
		mr, err := miniredis.Run()
		if err != nil {
			return err
		}
		defer mr.Close()
		cfg.RedisURL = "redis://" + mr.Addr()
	}
	if cfg.TemporalAddress == "" {
		log.Info("TEMPORAL_ADDRESS not set: starting a Temporal dev server")
		tmp, err := devenv.StartTemporal(ctx, io.Discard)
		if err != nil {
			return err
		}
		defer tmp.Stop()
		cfg.TemporalAddress = tmp.Address
		cfg.TemporalGRPCCompression = "none" // on loopback
	}
	a, err := newProcess(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.close()
	stopWorkers, err := startWorkers(ctx, a)
	if err != nil {
		return err
	}
	defer stopWorkers()
	demo, err := seedDemo(ctx, a.Tenancy, cfg.BaseURL)
	if err != nil {
		return fmt.Errorf("seed demo data: %w", err)
	}
	return a.serve(ctx, func() {
		_ = writeJSON(stdout, demo)
		fmt.Fprintf(stderr, "\nassessd dev is up at %s\ntry: curl -H 'Authorization: Bearer %s' %s/me\n\n",
			cfg.BaseURL, demo.APIKey, cfg.BaseURL)
	})
}

type demoUser struct {
	ID       string `json:"id"`
	Email    string `json:"email"`
	Password string `json:"password"`
	Role     string `json:"role"`
}

type demoData struct {
	URL    string     `json:"url"`
	OrgID  string     `json:"orgId"`
	APIKey string     `json:"apiKey"`
	Users  []demoUser `json:"users"`
}

// seedDemo creates a demo organization with an owner, a teacher and a
// student (fresh random passwords each run) and an API key for the owner.
func seedDemo(ctx context.Context, svc *tenancy.Service, baseURL string) (demoData, error) {
	org, err := svc.CreateOrg(ctx, tenancy.NewOrg{Name: "Demo School", Country: "DE", Plan: tenancy.PlanPro})
	if err != nil {
		return demoData{}, err
	}
	ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	d := demoData{URL: baseURL, OrgID: org.ID}
	for _, u := range []struct {
		email, name string
		role        tenancy.Role
	}{
		{"owner@demo.assessd.test", "Olivia Owner", tenancy.RoleOwner},
		{"teacher@demo.assessd.test", "Theo Teacher", tenancy.RoleTeacher},
		{"student@demo.assessd.test", "Sam Student", tenancy.RoleStudent},
	} {
		pw := make([]byte, 12)
		if _, err := rand.Read(pw); err != nil {
			return demoData{}, err
		}
		password := base64.RawURLEncoding.EncodeToString(pw)
		user, err := svc.CreateUser(ctx, tenancy.NewUser{Email: u.email, Name: u.name, Role: u.role, Password: password})
		if err != nil {
			return demoData{}, err
		}
		d.Users = append(d.Users, demoUser{ID: user.ID, Email: u.email, Password: password, Role: string(u.role)})
	}
	if _, d.APIKey, err = svc.CreateAPIKey(ctx, d.Users[0].ID, "demo"); err != nil {
		return demoData{}, err
	}
	return d, nil
}
