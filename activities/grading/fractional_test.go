package grading_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/testsuite"

	"github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
	wf "github.com/assessd/assessd/workflows/grading"
)

// Fractional scores are stored exactly, from the rules scorer, from the
// builtin AI grader through the grading activities, and in the summary.
// The builtin grader scores an essay of 19 words against minWords 50 as
// 0.38 × 5 points = 1.9; a true/false question is worth 2.5 points. Both
// query modes run: with server-typed parameters (exec, behind PgBouncer) an
// integer-typed placeholder fails, with described statements it truncates.
func TestFractionalScoresAreStoredExactly(t *testing.T) {
	for _, mode := range []string{storetest.ExecMode, "cache_statement"} {
		t.Run(mode, func(t *testing.T) {
			url := strings.Replace(storetest.NewURL(t), store.ExecModeParam+"="+storetest.QueryMode(), store.ExecModeParam+"="+mode, 1)
			db, err := store.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Close)
			fractionalScores(t, db)
		})
	}
}

func fractionalScores(t *testing.T, db *store.DB) {
	ten := tenancy.NewService(db)
	content := assessment.NewService(db) // no dispatcher: the activities below grade
	ctx := context.Background()
	org, err := ten.CreateOrg(ctx, tenancy.NewOrg{Name: "School", Country: "US", Plan: tenancy.PlanPro})
	if err != nil {
		t.Fatal(err)
	}
	staff := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	student, err := ten.CreateUser(staff, tenancy.NewUser{Email: "s@school.test", Name: "Student", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	exam, err := content.CreateExam(staff, assessment.NewExam{Name: "Fractions", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	essay, err := content.CreateQuestion(staff, exam.ID, assessment.NewQuestion{Type: assessment.TypeEssay,
		Prompt: "Explain photosynthesis.", Points: 5, Config: map[string]any{"minWords": 50}})
	if err != nil {
		t.Fatal(err)
	}
	truth, err := content.CreateQuestion(staff, exam.ID, assessment.NewQuestion{Type: assessment.TypeTrueFalse,
		Prompt: "Plants need light.", Points: 2.5, Config: map[string]any{"correct": true}})
	if err != nil {
		t.Fatal(err)
	}
	answer := strings.TrimSpace(strings.Repeat("light ", 19))
	r, err := content.SubmitResult(staff, exam.ID, assessment.NewResult{UserID: student.ID, Answers: []assessment.NewAnswer{
		{QuestionID: essay.ID, Value: answer}, {QuestionID: truth.ID, Value: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := answerScore(t, r, truth.ID); got != 2.5 {
		t.Fatalf("rules-scored answer stored as %v, want 2.5", got)
	}

	g := &grading.Activities{Results: content, Provider: ai.NewBuiltin(), Region: org.AIRegion,
		Fetcher: media.NewFetcher(nil, media.Options{}), Metrics: grading.NewMetrics(prometheus.NewRegistry(), func(s string) string { return s })}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(g.GradeAnswer)
	env.RegisterActivity(g.FinishResult)
	if _, err := env.ExecuteActivity(g.GradeAnswer, wf.AnswerInput{
		OrgID: org.ID, ResultID: r.ID, AnswerID: essay.ID, Region: org.AIRegion}); err != nil {
		t.Fatalf("grade the essay: %v", err)
	}
	if _, err := env.ExecuteActivity(g.FinishResult, wf.FinishInput{OrgID: org.ID, ResultID: r.ID}); err != nil {
		t.Fatalf("finish the result: %v", err)
	}

	if r, err = content.Result(staff, exam.ID, r.ID); err != nil {
		t.Fatal(err)
	}
	if got := answerScore(t, r, essay.ID); got != 1.9 {
		t.Errorf("AI-graded answer stored as %v, want 1.9", got)
	}
	if r.Status != "graded" || r.Score != 4.4 {
		t.Errorf("result: status %s score %v, want graded with 4.4", r.Status, r.Score)
	}
	sum, err := content.Summarize(staff, exam.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Mean != 4.4 || sum.Max != 4.4 || sum.Min != 4.4 {
		t.Errorf("summary mean %v min %v max %v, want 4.4", sum.Mean, sum.Min, sum.Max)
	}
	for _, q := range sum.Questions {
		if want := map[string]float64{essay.ID: 1.9, truth.ID: 2.5}[q.QuestionID]; q.MeanScore != want {
			t.Errorf("summary of question %s: mean score %v, want %v", q.QuestionID, q.MeanScore, want)
		}
	}
}

func answerScore(t *testing.T, r assessment.Result, questionID string) float64 {
	t.Helper()
	for _, a := range r.Answers {
		if a.QuestionID == questionID {
			return a.Score
		}
	}
	t.Fatalf("result %s has no answer to %s", r.ID, questionID)
	return 0
}
