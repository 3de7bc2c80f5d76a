package app_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/devenv"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/ltiplatform"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
)

// newLTIWorkflowEnv is newLTIEnv whose workflows run: the app's outbox
// dispatcher on a Temporal dev server, and a worker per region whose
// requests may reach the loopback platform.
func newLTIWorkflowEnv(t *testing.T) *ltiEnv {
	t.Helper()
	server := devenvtest.Server(t)
	tc, err := devenv.DialTemporal(server.Address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	private := egress.Targets{AllowPrivate: true}
	e := apptest.NewWithConfig(t, func(c *app.Config) {
		c.Webhooks, c.Temporal, c.Dispatch = private, tc, workflows.DispatchOptions{Sweep: 200 * time.Millisecond}
	})
	for _, region := range []string{"eu", "global"} {
		w, err := app.NewWorker(tc, e.DB, app.WorkerConfig{Region: region, Provider: ai.NewBuiltin(), Fetcher: media.NewFetcher(nil, media.Options{}),
			Metrics: gradingactivities.NewMetrics(prometheus.NewRegistry(), func(s string) string { return s }), Webhooks: private})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	tn := e.NewTenant("US", "pro")
	l := &ltiEnv{env: e, tn: tn, platform: ltiplatform.New(t, e.Srv.URL),
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	l.platformID = apptest.Str(e.Do("POST", "/lti/platforms", tn.Keys[tenancy.RoleAdmin], platformBody(l.platform)).Must(t, 200).Body, "id")
	return l
}

// courseAssignment has the course's class (made by an instructor's
// launch) given an exam of one true-or-false question, open now; it
// returns the assignment and the question.
func (l *ltiEnv) courseAssignment(t *testing.T) (assignmentID, questionID string) {
	t.Helper()
	e, owner := l.env, l.tn.Keys[tenancy.RoleOwner]
	if res := l.platform.Run(t, l.client, instructor("teacher-1")); res.Status != 200 {
		t.Fatalf("instructor's launch: %d %s", res.Status, res.Body)
	}
	class := apptest.Str(e.Do("GET", "/classes", owner, nil).Must(t, 200).Body["classes"].([]any)[0].(map[string]any), "id")
	exam := apptest.Str(e.Do("POST", "/exams", owner, map[string]any{"name": "Fractions", "language": "en"}).Must(t, 200).Body, "id")
	questionID = apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", owner, map[string]any{"type": "true_false",
		"prompt": "One half is more than one third.", "config": map[string]any{"correct": true}}).Must(t, 200).Body, "id")
	now := time.Now().UTC()
	assignmentID = apptest.Str(e.Do("POST", "/assignments", owner, map[string]any{"examId": exam, "classIds": []string{class},
		"opensAt": now.Add(-time.Minute).Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339)}).Must(t, 200).Body, "id")
	return assignmentID, questionID
}

// takeFromLineItem launches sub as a learner of assignmentID from line
// item lineItem, answers questionID with answer and submits; it returns
// the result.
func (l *ltiEnv) takeFromLineItem(t *testing.T, sub, assignmentID, lineItem, questionID, answer string) string {
	t.Helper()
	launch := learner(sub)
	launch.Custom = map[string]string{"assignment_id": assignmentID}
	launch.LineItem = lineItem
	res := l.platform.Run(t, l.client, launch)
	if res.Status != http.StatusSeeOther {
		t.Fatalf("learner's launch: %d %s", res.Status, res.Body)
	}
	submitted := ltiplatform.Post(t, l.client, res.Header.Get("Location")+"/submit", url.Values{"shown": {questionID}, questionID: {answer}})
	if submitted.Status != http.StatusSeeOther && submitted.Status != http.StatusOK {
		t.Fatalf("submit: %d %s", submitted.Status, submitted.Body)
	}
	for _, a := range l.env.Do("GET", "/assignments/"+assignmentID+"/attempts", l.tn.Keys[tenancy.RoleOwner], nil).Must(t, 200).Body["attempts"].([]any) {
		if a := a.(map[string]any); a["status"] == "submitted" && a["resultId"] != nil {
			if u := l.env.Do("GET", "/users/"+apptest.Str(a, "userId"), l.tn.Keys[tenancy.RoleOwner], nil).Must(t, 200).Body; u["email"] == sub+"@students.example" {
				return apptest.Str(a, "resultId")
			}
		}
	}
	t.Fatalf("no submitted attempt of %s", sub)
	return ""
}

// TestLTIScoresReachTheGradebook: a learner launched from a line item
// submits; the score is posted to the line item's scores endpoint with a
// token granted for the tool's signed assertion, once; a corrected score
// is posted again, after the platform's outage, with the cached token;
// a score the platform refuses is given up and audited.
func TestLTIScoresReachTheGradebook(t *testing.T) {
	t.Parallel()
	l := newLTIWorkflowEnv(t)
	e, owner := l.env, l.tn.Keys[tenancy.RoleOwner]
	asg, question := l.courseAssignment(t)

	result := l.takeFromLineItem(t, "student-1", asg, "li-1", question, "true")
	scores := waitScores(t, l.platform, "li-1", 1)
	s := scores[0]
	if s.UserID != "student-1" || s.ScoreGiven == nil || *s.ScoreGiven != 1 || *s.ScoreMaximum != 1 ||
		s.ActivityProgress != "Completed" || s.GradingProgress != "FullyGraded" {
		t.Fatalf("posted score: %+v", s)
	}
	entry := auditEntry(e, l.tn, "lti.score_posted", l.platformID, "result", result)
	if after := entry["after"].(map[string]any); after["lineItem"] != l.platform.LineItemURL("li-1") || after["scoreGiven"] != 1.0 {
		t.Fatalf("lti.score_posted: %v", entry)
	}

	// A correction is a new grading: posted again, once, through a 503.
	l.platform.RefuseScores(http.StatusServiceUnavailable)
	e.Do("PATCH", "/results/"+result+"/answers/"+question, owner, map[string]any{"value": false}).Must(t, 200)
	scores = waitScores(t, l.platform, "li-1", 2)
	if s := scores[1]; s.ScoreGiven == nil || *s.ScoreGiven != 0 || s.Timestamp <= scores[0].Timestamp {
		t.Fatalf("corrected score: %+v after %+v", s, scores[0])
	}
	if n := l.platform.TokenGrants(); n != 1 {
		t.Fatalf("%d token grants, want 1: the token is cached until it expires", n)
	}
	time.Sleep(time.Second)
	if n := len(l.platform.Scores("li-1")); n != 2 {
		t.Fatalf("%d scores posted for two gradings", n)
	}

	// A score the platform refuses is given up, audited.
	l.platform.RefuseScores(http.StatusBadRequest)
	refused := l.takeFromLineItem(t, "student-2", asg, "li-1", question, "true")
	eventually.Succeeds(t, 30*time.Second, func() error {
		r := e.Do("GET", "/audit-logs?action=lti.score_failed&targetId="+refused, owner, nil).Must(t, 200)
		list, _ := r.Body["auditLogs"].([]any)
		if len(list) == 0 {
			return errors.New("no lti.score_failed entry yet")
		}
		if reason := apptest.Str(list[0].(map[string]any), "reason"); !strings.Contains(reason, "400") {
			t.Fatalf("lti.score_failed: %s", r.Raw)
		}
		return nil
	})
}

// waitScores waits until line item id holds n scores and returns them.
func waitScores(t *testing.T, p *ltiplatform.Platform, id string, n int) []ltiplatform.Score {
	t.Helper()
	eventually.Succeeds(t, 45*time.Second, func() error {
		if got := len(p.Scores(id)); got < n {
			return fmt.Errorf("%d scores, want %d", got, n)
		}
		return nil
	})
	return p.Scores(id)
}

// TestLTIRosterSync: an instructor's launch that offers the course's
// roster reads it into the class in the background; POST
// /classes/{id}/sync reads it again, across the memberships' pages:
// active learners and instructors on the roster, mentors skipped,
// members the platform dropped removed, members added by hand kept.
func TestLTIRosterSync(t *testing.T) {
	t.Parallel()
	l := newLTIEnv(t)
	e, owner, teacherKey := l.env, l.tn.Keys[tenancy.RoleOwner], l.tn.Keys[tenancy.RoleTeacher]
	roster := []ltiplatform.Member{
		{UserID: "teacher-1", Roles: []string{ltiplatform.RoleInstructor}, Name: "Ines Instructor"},
		{UserID: "student-1", Roles: []string{ltiplatform.RoleLearner}, Name: "Lena Learner", Email: "lena@students.example"},
		{UserID: "student-2", Roles: []string{ltiplatform.RoleLearner}, Name: "Sam Second"},
		{UserID: "student-3", Roles: []string{ltiplatform.RoleLearner}, Name: "Ivo Inactive", Status: "Inactive"},
		{UserID: "mentor-1", Roles: []string{ltiplatform.RoleMentor}, Name: "Mo Mentor"},
	}
	l.platform.SetMembers(roster)
	launch := instructor("teacher-1")
	launch.Roster = true
	if res := l.platform.Run(t, l.client, launch); res.Status != 200 {
		t.Fatalf("instructor's launch: %d %s", res.Status, res.Body)
	}
	class := apptest.Str(e.Do("GET", "/classes", owner, nil).Must(t, 200).Body["classes"].([]any)[0].(map[string]any), "id")
	names := func() map[string]string {
		out := map[string]string{}
		for _, m := range e.Do("GET", "/classes/"+class+"/members", owner, nil).Must(t, 200).Body["members"].([]any) {
			m := m.(map[string]any)
			out[apptest.Str(m, "name")] = apptest.Str(m, "role")
		}
		return out
	}
	eventually.Succeeds(t, 15*time.Second, func() error {
		if got := names(); len(got) != 3 || got["Lena Learner"] != "student" || got["Sam Second"] != "student" || got["Ines Instructor"] != "teacher" {
			return fmt.Errorf("members after the instructor's launch: %v", got)
		}
		return nil
	})
	if reads := l.platform.RosterReads(); reads != 3 {
		t.Fatalf("%d roster pages read, want 3 (two members a page)", reads)
	}

	// A member added by hand stays; a dropped one goes.
	byHand := apptest.Str(e.Do("POST", "/users", owner, map[string]any{"email": "aide@school.example", "name": "Ada Aide", "role": "student"}).Must(t, 200).Body, "id")
	e.Do("POST", "/classes/"+class+"/members", owner, map[string]any{"userId": byHand, "role": "student"}).Must(t, 200)
	e.Do("POST", "/classes/"+class+"/members", owner, map[string]any{"userId": l.tn.Users[tenancy.RoleTeacher].ID, "role": "teacher"}).Must(t, 200)
	l.platform.SetMembers(append(roster[:2:2], roster[3:]...))
	sync := e.Do("POST", "/classes/"+class+"/sync", teacherKey, map[string]any{}).Must(t, 200).Body
	if sync["classId"] != class || sync["members"] != 3.0 || sync["removed"] != 1.0 || sync["skipped"] != 1.0 || sync["added"] != nil && sync["added"] != 0.0 {
		t.Fatalf("sync: %v", sync)
	}
	if got := names(); len(got) != 4 || got["Sam Second"] != "" || got["Ada Aide"] != "student" {
		t.Fatalf("members after the sync: %v", got)
	}
	auditEntry(e, l.tn, "lti.roster_synced", l.tn.Users[tenancy.RoleTeacher].ID, "class", class)

	// Classes no launch made, foreign classes and students are refused.
	plain := apptest.Str(e.Do("POST", "/classes", owner, map[string]any{"name": "Chess club"}).Must(t, 200).Body, "id")
	if r := e.Do("POST", "/classes/"+plain+"/sync", owner, map[string]any{}).Must(t, 400); r.Reason() != "CLASS_NOT_FROM_LTI" {
		t.Fatalf("sync of a class no launch made: %s", r.Raw)
	}
	other := e.NewTenant("DE", "pro")
	e.Do("POST", "/classes/"+class+"/sync", other.Keys[tenancy.RoleOwner], map[string]any{}).Must(t, 404)
	e.Do("POST", "/classes/"+class+"/sync", l.tn.Keys[tenancy.RoleStudent], map[string]any{}).Must(t, 403)
	e.Do("POST", "/classes/cls_nope/sync", owner, map[string]any{}).Must(t, 404)
}

// TestLTILoginsAreRateLimited: one address's logins beyond the limit are
// answered 429 with Retry-After, as a page.
func TestLTILoginsAreRateLimited(t *testing.T) {
	t.Parallel()
	l := newLTIEnv(t)
	login := "/lti/login?iss=" + url.QueryEscape(l.platform.Issuer) + "&login_hint=h&target_link_uri=" +
		url.QueryEscape(l.env.Srv.URL+"/lti/launch") + "&client_id=" + l.platform.ClientID
	// The bucket refills at 10 a second while the test sends: the limit
	// answers within a few dozen logins past 600.
	for i := range 800 {
		resp := l.get(t, login)
		body := readBody(t, resp)
		if resp.StatusCode == http.StatusFound {
			continue
		}
		if i < 600 || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "TOO_MANY_LAUNCHES") {
			t.Fatalf("login %d: %d %v %s", i, resp.StatusCode, resp.Header, body)
		}
		return
	}
	t.Fatal("800 logins from one address in a burst were all taken")
}
