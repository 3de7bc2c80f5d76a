package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/delivery"
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
	demo, err := seedDemo(ctx, a.App, cfg.BaseURL)
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
	// APIKey is the user's own key: the teacher's manages the class and
	// the assignment, the student's takes it.
	APIKey string `json:"apiKey"`
}

type demoData struct {
	URL   string `json:"url"`
	OrgID string `json:"orgId"`
	// APIKey is the owner's.
	APIKey string     `json:"apiKey"`
	Users  []demoUser `json:"users"`
	// Class, Exam and Assignment are a class of the teacher and the
	// student, an exam of three questions, and an assignment of it to the
	// class, open for a week.
	Class      demoThing `json:"class"`
	Exam       demoThing `json:"exam"`
	Assignment struct {
		ID               string    `json:"id"`
		OpensAt          time.Time `json:"opensAt"`
		ClosesAt         time.Time `json:"closesAt"`
		TimeLimitMinutes int       `json:"timeLimitMinutes"`
	} `json:"assignment"`
}

type demoThing struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// seedDemo creates a demo organization with an owner, a teacher and a
// student (fresh random passwords and API keys each run), a class of the
// teacher and the student, an exam, and an assignment of the exam to the
// class that is open now.
func seedDemo(ctx context.Context, a *app.App, baseURL string) (demoData, error) {
	org, err := a.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "Demo School", Country: "DE", Plan: tenancy.PlanPro})
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
		user, err := a.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: u.email, Name: u.name, Role: u.role, Password: password})
		if err != nil {
			return demoData{}, err
		}
		_, key, err := a.Tenancy.CreateAPIKey(ctx, user.ID, "demo")
		if err != nil {
			return demoData{}, err
		}
		d.Users = append(d.Users, demoUser{ID: user.ID, Email: u.email, Password: password, Role: string(u.role), APIKey: key})
	}
	d.APIKey = d.Users[0].APIKey
	return d, seedDelivery(ctx, a, &d)
}

// seedDelivery adds the demo's class, exam and open assignment.
func seedDelivery(ctx context.Context, a *app.App, d *demoData) error {
	class, err := a.Classes.Create(ctx, classes.NewClass{Name: "Year 7 Maths"})
	if err != nil {
		return err
	}
	d.Class = demoThing{ID: class.ID, Name: class.Name}
	for _, m := range []classes.NewMember{{UserID: d.Users[1].ID, Role: classes.RoleTeacher}, {UserID: d.Users[2].ID, Role: classes.RoleStudent}} {
		if _, err := a.Classes.AddMember(ctx, class.ID, m); err != nil {
			return err
		}
	}
	exam, err := a.Assessment.CreateExam(ctx, assessment.NewExam{Name: "Fractions check", Language: "en", DurationMinutes: 20})
	if err != nil {
		return err
	}
	d.Exam = demoThing{ID: exam.ID, Name: exam.Name}
	for _, q := range []assessment.NewQuestion{
		{Type: assessment.TypeMultipleChoice, Prompt: "Which fraction equals 0.5?", Points: 2, Config: map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "1/3"}, map[string]any{"id": "b", "text": "1/2", "correct": true},
			map[string]any{"id": "c", "text": "2/3"}}}},
		{Type: assessment.TypeTrueFalse, Prompt: "2/4 is equal to 1/2.", Config: map[string]any{"correct": true}},
		{Type: assessment.TypeNumeric, Prompt: "What is 3/4 as a decimal?", Config: map[string]any{"correct": 0.75, "tolerance": 0.001}},
	} {
		if _, err := a.Assessment.CreateQuestion(ctx, exam.ID, q); err != nil {
			return err
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	asg, err := a.Delivery.CreateAssignment(ctx, delivery.NewAssignment{ExamID: exam.ID, ClassIDs: []string{class.ID},
		OpensAt: now.Add(-time.Minute), ClosesAt: now.Add(7 * 24 * time.Hour), ShuffleOptions: true})
	if err != nil {
		return err
	}
	d.Assignment.ID, d.Assignment.OpensAt, d.Assignment.ClosesAt = asg.ID, asg.OpensAt, asg.ClosesAt
	d.Assignment.TimeLimitMinutes = asg.TimeLimitMinutes
	return nil
}
