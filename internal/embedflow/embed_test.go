package embedflow_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/regeneration"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

type fixture struct {
	svc     *embedflow.Service
	content *assessment.Service
	teacher context.Context
	users   map[tenancy.Role]tenancy.User
	foreign tenancy.User
}

func newFixture(t *testing.T, rdb *redis.Client) fixture {
	t.Helper()
	return newFixtureWith(t, rdb, storetest.New(t), nilGenerator)
}

// nilGenerator is for fixtures whose tests start no generation.
func nilGenerator(*store.DB) embedflow.Generator { return nil }

// newFixtureWith builds the fixture on db with the generator gen returns.
func newFixtureWith(t *testing.T, rdb *redis.Client, db *store.DB, gen func(*store.DB) embedflow.Generator) fixture {
	t.Helper()
	ten := tenancy.NewService(db)
	ctx := context.Background()
	f := fixture{users: map[tenancy.Role]tenancy.User{}}
	for i, country := range []string{"DE", "US"} {
		org, err := ten.CreateOrg(ctx, tenancy.NewOrg{Name: "School", Country: country})
		if err != nil {
			t.Fatal(err)
		}
		octx := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
		for _, r := range []tenancy.Role{tenancy.RoleTeacher, tenancy.RoleStudent} {
			u, err := ten.CreateUser(octx, tenancy.NewUser{Email: fmt.Sprintf("%s%d@x.test", r, i), Name: string(r), Role: r})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				f.users[r] = u
			} else {
				f.foreign = u
			}
		}
		if i == 0 {
			f.teacher = tenancy.WithCaller(ctx, &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: org.ID,
				UserID: f.users[tenancy.RoleTeacher].ID, Role: tenancy.RoleTeacher, Scopes: tenancy.APIKeyScopes(tenancy.RoleTeacher)})
		}
	}
	f.content = assessment.NewService(db)
	f.svc = embedflow.NewService(embedflow.NewStore(rdb), ten, f.content, gen(db), regeneration.NewService(db, f.content), "https://assessd.example", prometheus.NewRegistry(), func(s string) string { return s })
	return f
}

// exam creates an exam of the teacher's holding questions.
func (f fixture) exam(t *testing.T, name string, questions ...assessment.NewQuestion) (assessment.Exam, []assessment.Question) {
	t.Helper()
	exam, err := f.content.CreateExam(f.teacher, assessment.NewExam{Name: name, Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	qs := make([]assessment.Question, len(questions))
	for i, in := range questions {
		if qs[i], err = f.content.CreateQuestion(f.teacher, exam.ID, in); err != nil {
			t.Fatal(err)
		}
	}
	return exam, qs
}

// session creates a session of flow on examID, acting as the fixture's
// user of role.
func (f fixture) session(t *testing.T, flow string, role tenancy.Role, examID string) embedflow.Session {
	t.Helper()
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: flow, ActorID: f.users[role].ID, ExamID: examID})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func TestCreateAndOpen(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	f := newFixture(t, rdb)
	in := embedflow.NewSession{Flow: "generate-exam", ActorID: f.users[tenancy.RoleTeacher].ID, ExpiresIn: 120,
		Strings:        map[string]string{"account.attributes.studentLevel-name": "Grade"},
		Presets:        map[string]any{"studentLevel": "7th grade", "hideStudentLevel": true},
		AllowedOrigins: []string{"https://lms.example.com/", "https://lms.example.com"}}
	sess, err := f.svc.Create(f.teacher, in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sess.ID, "emb_") || len(sess.ID) != 36 || f.svc.URL(sess) != "https://assessd.example/embed/"+sess.ID {
		t.Fatalf("session id %q url %q", sess.ID, f.svc.URL(sess))
	}
	if len(sess.AllowedOrigins) != 1 || sess.AllowedOrigins[0] != "https://lms.example.com" {
		t.Fatalf("origins %v", sess.AllowedOrigins)
	}
	ttl, err := rdb.TTL(context.Background(), "assessd:embed:"+sess.ID).Result()
	if err != nil || ttl <= 100*time.Second || ttl > 120*time.Second {
		t.Fatalf("redis TTL %v, %v; want about 120s", ttl, err)
	}
	got, err := f.svc.Open(context.Background(), sess.ID)
	if err != nil || got.ActorID != in.ActorID || got.Presets["studentLevel"] != "7th grade" || got.Strings.T("account.attributes.studentLevel-name") != "Grade" ||
		got.Strings.T("account.attributes.subject-name") != "Subject" {
		t.Fatalf("opened %+v, %v", got, err)
	}
	// The session grants exactly its flow's scopes, as the actor.
	c, err := f.svc.Caller(context.Background(), got)
	if err != nil || c.UserID != in.ActorID || c.Role != tenancy.RoleTeacher || c.HasScope(tenancy.ScopeUsersRead) || !c.HasScope(tenancy.ScopeExamsWrite) {
		t.Fatalf("caller %+v, %v", c, err)
	}
	if _, err := f.svc.Open(context.Background(), "emb_"+strings.Repeat("a", 32)); !embedflow.IsNotFound(err) {
		t.Fatalf("unknown session: %v", err)
	}
	rdb.Del(context.Background(), "assessd:embed:"+sess.ID) // as when the TTL runs out
	if _, err := f.svc.Open(context.Background(), sess.ID); !embedflow.IsNotFound(err) {
		t.Fatalf("expired session: %v", err)
	}
}

func TestCreateRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t, redistest.Client(t))
	teacher, student := f.users[tenancy.RoleTeacher].ID, f.users[tenancy.RoleStudent].ID
	tests := []struct {
		name  string
		in    embedflow.NewSession
		kind  errs.Kind
		field string
	}{
		{"unknown flow", embedflow.NewSession{Flow: "quiz", ActorID: teacher}, errs.KindInvalid, "flow"},
		{"no actor", embedflow.NewSession{Flow: "generate-exam"}, errs.KindInvalid, "actor"},
		{"foreign actor", embedflow.NewSession{Flow: "generate-exam", ActorID: f.foreign.ID}, errs.KindNotFound, ""},
		{"malformed actor", embedflow.NewSession{Flow: "generate-exam", ActorID: "bob"}, errs.KindInvalid, "actor"},
		{"student authoring", embedflow.NewSession{Flow: "generate-exam", ActorID: student}, errs.KindInvalid, "actor"},
		{"teacher in a student flow", embedflow.NewSession{Flow: "student-exam", ActorID: teacher, ExamID: "exm_x"}, errs.KindInvalid, "actor"},
		{"missing exam", embedflow.NewSession{Flow: "student-exam", ActorID: student}, errs.KindInvalid, "examId"},
		{"missing result", embedflow.NewSession{Flow: "student-results", ActorID: student}, errs.KindInvalid, "resultId"},
		{"unknown preset", embedflow.NewSession{Flow: "generate-exam", ActorID: teacher, Presets: map[string]any{"color": "red"}}, errs.KindInvalid, "presets.color"},
		{"bad preset value", embedflow.NewSession{Flow: "generate-exam", ActorID: teacher, Presets: map[string]any{"durationMinutes": 2.5}}, errs.KindInvalid, "presets.durationMinutes"},
		{"hidden subject without value", embedflow.NewSession{Flow: "generate-exam", ActorID: teacher, Presets: map[string]any{"hideSubject": true}}, errs.KindInvalid, "presets.hideSubject"},
		{"presets on another flow", embedflow.NewSession{Flow: "authoring", ActorID: teacher, ExamID: "exm_x", Presets: map[string]any{"subject": "x"}}, errs.KindInvalid, "presets"},
		{"student preset of another flow", embedflow.NewSession{Flow: "student-exam", ActorID: student, ExamID: "exm_x", Presets: map[string]any{"subject": "x"}}, errs.KindInvalid, "presets.subject"},
		{"bad layout", embedflow.NewSession{Flow: "student-exam", ActorID: student, ExamID: "exm_x", Presets: map[string]any{"layout": "grid"}}, errs.KindInvalid, "presets.layout"},
		{"unknown translation key", embedflow.NewSession{Flow: "generate-exam", ActorID: teacher, Strings: map[string]string{"nope": "x"}}, errs.KindInvalid, "theme.strings.nope"},
		{"expiry too long", embedflow.NewSession{Flow: "generate-exam", ActorID: teacher, ExpiresIn: 999999}, errs.KindInvalid, "expiresIn"},
		{"bad origin", embedflow.NewSession{Flow: "generate-exam", ActorID: teacher, AllowedOrigins: []string{"http://lms.example.com"}}, errs.KindInvalid, "allowedOrigins"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.svc.Create(f.teacher, tt.in)
			e, ok := errs.As(err)
			if !ok || e.Kind != tt.kind || e.Field != tt.field {
				t.Fatalf("err = %v, want kind %d field %q", err, tt.kind, tt.field)
			}
		})
	}
	studentCtx := tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: f.users[tenancy.RoleStudent].OrgID,
		UserID: student, Role: tenancy.RoleStudent, Scopes: tenancy.APIKeyScopes(tenancy.RoleStudent)})
	if _, err := f.svc.Create(studentCtx, embedflow.NewSession{Flow: "generate-exam", ActorID: teacher}); !errs.Is(err, errs.KindForbidden) {
		t.Fatalf("a student creating a session: %v", err)
	}
}

// TestRedisOutage stops the session store's Redis and starts it again on
// the same address: creating a session is a clear 503 while it is down and
// works again once it is back.
func TestRedisOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(&redis.Options{MaxRetries: 1, DialTimeout: 500 * time.Millisecond})
	defer rdb.Close()
	f := newFixture(t, rdb)
	in := embedflow.NewSession{Flow: "generate-exam", ActorID: f.users[tenancy.RoleTeacher].ID}
	if _, err := f.svc.Create(f.teacher, in); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	_, err := f.svc.Create(f.teacher, in)
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindUnavailable || !strings.Contains(e.Message, "temporarily unavailable") {
		t.Fatalf("with Redis down: %v", err)
	}
	srv.Restart()
	if _, err := f.svc.Create(f.teacher, in); err != nil {
		t.Fatalf("after Redis came back: %v", err)
	}
}
