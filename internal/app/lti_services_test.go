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
