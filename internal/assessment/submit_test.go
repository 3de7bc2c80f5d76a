package assessment_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// fixture is an organization with a student and an exam whose questions
// cover rule scoring (built-in and custom types) and AI grading.
type fixture struct {
	url     string // the database's, as the schema owner
	db      *store.DB
	ten     *tenancy.Service
	content *assessment.Service
	staff   context.Context
	student string
	exam    assessment.Exam
	custom  assessment.TypeDef
	qs      []assessment.Question
}

func newFixture(t *testing.T, opts ...store.Option) fixture {
	t.Helper()
	f := newEmptyFixture(t, opts...)
	var err error
	if f.custom, err = f.content.CreateQuestionType(f.staff, assessment.NewTypeDef{Key: "exact_word", Name: "Exact word",
		Condition: `=answer.value = config.word`}); err != nil {
		t.Fatal(err)
	}
	for _, in := range []assessment.NewQuestion{
		{Type: assessment.TypeTrueFalse, Prompt: "Water is wet.", Config: map[string]any{"correct": true}},
		{Type: assessment.TypeTrueFalse, Prompt: "Fire is cold.", Config: map[string]any{"correct": false}},
		{Type: f.custom.ID, Prompt: "Say hello.", Config: map[string]any{"word": "hello"}},
		{Type: assessment.TypeEssay, Prompt: "Explain.", Config: map[string]any{}},
	} {
		q, err := f.content.CreateQuestion(f.staff, f.exam.ID, in)
		if err != nil {
			t.Fatal(err)
		}
		f.qs = append(f.qs, q)
	}
	return f
}

// newEmptyFixture is an organization (in the EU region) with a student and
// an exam without questions.
func newEmptyFixture(t *testing.T, opts ...store.Option) fixture {
	t.Helper()
	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	ten := tenancy.NewService(db)
	f := fixture{url: url, db: db, ten: ten, content: assessment.NewService(db)}
	org, err := ten.CreateOrg(context.Background(), tenancy.NewOrg{Name: "School", Country: "DE", Plan: tenancy.PlanPro})
	if err != nil {
		t.Fatal(err)
	}
	f.staff = tenancy.WithCaller(context.Background(), tenancy.SystemCaller(org.ID))
	student, err := ten.CreateUser(f.staff, tenancy.NewUser{Email: "s@school.test", Name: "S", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	f.student = student.ID
	if f.exam, err = f.content.CreateExam(f.staff, assessment.NewExam{Name: "Trips", Language: "en"}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f fixture) submit(t *testing.T, essay bool) assessment.Result {
	t.Helper()
	return f.submitIn(t, f.staff, essay)
}

// submitIn is submit with ctx, which may carry a transaction.
func (f fixture) submitIn(t *testing.T, ctx context.Context, essay bool) assessment.Result {
	t.Helper()
	answers := []assessment.NewAnswer{
		{QuestionID: f.qs[0].ID, Value: true}, {QuestionID: f.qs[1].ID, Value: true}, {QuestionID: f.qs[2].ID, Value: "hello"},
	}
	if essay {
		answers = append(answers, assessment.NewAnswer{QuestionID: f.qs[3].ID, Value: "Because."})
	}
	r, err := f.content.SubmitResult(ctx, f.exam.ID, assessment.NewResult{UserID: f.student, Answers: answers})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSubmitResultRoundTrips holds SubmitResult to at most five round trips
// to PostgreSQL, whether rules score every answer at once or an answer waits
// for AI grading (which adds the outbox entry).
func TestSubmitResultRoundTrips(t *testing.T) {
	trips := &storetest.RoundTrips{}
	f := newFixture(t, store.WithTracer(trips))
	for _, c := range []struct {
		name  string
		essay bool
		want  string
	}{{"scored by rules", false, assessment.StatusGraded}, {"awaiting AI grading", true, assessment.StatusGrading}} {
		before := trips.Count()
		r := f.submit(t, c.essay)
		n := trips.Count() - before
		t.Logf("%s: %d round trips", c.name, n)
		if n > 5 {
			t.Errorf("%s: SubmitResult took %d round trips, want at most 5", c.name, n)
		}
		if r.Status != c.want || r.Score != 2 || r.MaxScore != 4 || len(r.Answers) != 4 {
			t.Errorf("%s: result %+v", c.name, r)
		}
		stored, err := f.content.Result(f.staff, f.exam.ID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := summary(stored), summary(r); got != want {
			t.Errorf("%s: SubmitResult returned\n%s\nbut the stored result is\n%s", c.name, want, got)
		}
	}
}

// summary prints a result with its times in UTC, for comparison.
func summary(r assessment.Result) string {
	r.SubmittedAt, r.GradedAt = r.SubmittedAt.UTC(), r.GradedAt.UTC()
	for i := range r.Answers {
		r.Answers[i].GradedAt = r.Answers[i].GradedAt.UTC()
	}
	return fmt.Sprintf("%+v", r)
}

// TestScoringRulesCompileOncePerRevision: many submissions compile each
// rule once; changing a type's rule compiles the new one, which then scores.
func TestScoringRulesCompileOncePerRevision(t *testing.T) {
	f := newFixture(t)
	f.submit(t, false)
	first := assessment.RuleCompiles(f.content)
	if first != 2 {
		t.Fatalf("the first submission compiled %d rules, want 2 (true_false and exact_word)", first)
	}
	for range 20 {
		f.submit(t, false)
	}
	if n := assessment.RuleCompiles(f.content); n != first {
		t.Fatalf("20 more submissions compiled %d rules, want none", n-first)
	}
	rule := `=$lowercase(answer.value) = config.word`
	if _, err := f.content.UpdateQuestionType(f.staff, f.custom.ID, assessment.TypeDefPatch{Condition: &rule}); err != nil {
		t.Fatal(err)
	}
	r, err := f.content.SubmitResult(f.staff, f.exam.ID, assessment.NewResult{UserID: f.student,
		Answers: []assessment.NewAnswer{{QuestionID: f.qs[2].ID, Value: "HELLO"}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := assessment.RuleCompiles(f.content); n != first+1 {
		t.Fatalf("after the type changed, a submission compiled %d rules, want 1", n-first)
	}
	if r.Score != 1 {
		t.Fatalf("the changed rule did not score: %+v", r.Answers)
	}
}

// TestARuleScoresEverySubmissionAlike: a rule that applies a function with
// ~> scores the tenth submission as it scored the first (the library
// rewrites such a tree as it evaluates it, decision 0143).
func TestARuleScoresEverySubmissionAlike(t *testing.T) {
	f := newFixture(t)
	rule := `=(answer.value ~> $lowercase()) = config.word`
	if _, err := f.content.UpdateQuestionType(f.staff, f.custom.ID, assessment.TypeDefPatch{Condition: &rule}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		r, err := f.content.SubmitResult(f.staff, f.exam.ID, assessment.NewResult{UserID: f.student,
			Answers: []assessment.NewAnswer{{QuestionID: f.qs[2].ID, Value: "HELLO"}}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Score != 1 {
			t.Fatalf("submission %d scored %v: %+v", i+1, r.Score, r.Answers)
		}
	}
}

// TestFinishResultRoundTrips holds finishing a result, the last step of
// every AI grading, to four round trips: BEGIN with the tenant scope; the
// failed answers, the result's update, its answers and the webhook
// subscriptions; its audit entry with its webhook event; COMMIT. The
// finished result carries its answers as they ended.
func TestFinishResultRoundTrips(t *testing.T) {
	trips := &storetest.RoundTrips{}
	f := newFixture(t, store.WithTracer(trips))
	essay := f.qs[3].ID
	for _, c := range []struct {
		name     string
		failures map[string]string
		status   string
		score    float64
		essay    assessment.Answer
	}{
		{"graded", nil, assessment.StatusGraded, 3, assessment.Answer{Status: assessment.AnswerGraded, Score: 1, Feedback: "Fine."}},
		{"an answer failed", map[string]string{essay: "the provider refused"}, assessment.StatusFailed, 2,
			assessment.Answer{Status: assessment.AnswerFailed, Feedback: "the provider refused"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.submit(t, true)
			ctx := f.staff
			if c.failures == nil {
				if err := f.content.RecordGrade(ctx, r.ID, essay, 1, "Fine.", nil); err != nil {
					t.Fatal(err)
				}
			}
			before := trips.Count()
			finished, err := f.content.FinishResult(ctx, r.ID, c.failures)
			if err != nil {
				t.Fatal(err)
			}
			// BEGIN with the scope, the result's update, and the COMMIT with
			// the audit entry (decision 0141).
			if n := trips.Count() - before; n > 3 {
				t.Errorf("FinishResult took %d round trips, want at most 3", n)
			}
			if finished.Status != c.status || finished.Score != c.score || len(finished.Answers) != len(f.qs) {
				t.Fatalf("finished result %+v", finished)
			}
			got := finished.Answers[3]
			if got.QuestionID != essay || got.Status != c.essay.Status || got.Score != c.essay.Score || got.Feedback != c.essay.Feedback || got.GradedAt.IsZero() {
				t.Errorf("the essay's answer %+v", got)
			}
			if again, err := f.content.FinishResult(ctx, r.ID, nil); err != nil || again.Status != c.status || len(again.Answers) != len(f.qs) {
				t.Errorf("finishing again: %+v, %v", again, err)
			}
		})
	}
}

// TestClaimCarriesTheAnswersToGrade: the outbox claim of a submitted
// result lists the answers awaiting AI grading, in exam order, for the
// workflow's input (decision 0138); rule-scored answers are not among
// them.
func TestClaimCarriesTheAnswersToGrade(t *testing.T) {
	f := newFixture(t)
	r := f.submit(t, true)
	items, err := outbox.NewStore(f.db).Claim(context.Background(), outbox.Filter{}, 10, time.Minute)
	if err != nil || len(items) != 1 || items[0].SubjectID != r.ID {
		t.Fatalf("claimed %+v, %v; want the result's row", items, err)
	}
	if want := []string{f.qs[3].ID}; !slices.Equal(items[0].Answers, want) {
		t.Fatalf("the claim's answers %v, want the essay's %v", items[0].Answers, want)
	}
}

// TestGradingInputIsOneRoundTrip holds loading an answer for AI grading,
// with the question as the student answered it, to one round trip, and
// tells an answer whose question was deleted from one that is gone.
func TestGradingInputIsOneRoundTrip(t *testing.T) {
	trips := &storetest.RoundTrips{}
	f := newFixture(t, store.WithTracer(trips))
	essay := f.qs[3]
	r := f.submit(t, true)
	// A revision after the submission is not what the answer is graded
	// against.
	prompt := "Explain it again."
	if _, err := f.content.UpdateQuestion(f.staff, f.exam.ID, essay.ID, assessment.QuestionPatch{Prompt: &prompt}); err != nil {
		t.Fatal(err)
	}
	before := trips.Count()
	in, err := f.content.GradingInput(f.staff, r.ID, essay.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := trips.Count() - before; n != 1 {
		t.Errorf("GradingInput took %d round trips, want 1", n)
	}
	if in.QuestionType != assessment.TypeEssay || in.Prompt != essay.Prompt || in.Answer != "Because." || in.Points != essay.Points {
		t.Errorf("grading input %+v", in)
	}

	if _, err := f.content.GradingInput(f.staff, r.ID, "qst_missing"); !errors.Is(err, assessment.ErrCannotGrade) || !strings.Contains(err.Error(), "the answer no longer exists") {
		t.Errorf("an answer that is not there: %v", err)
	}
	if err := f.content.DeleteQuestion(f.staff, f.exam.ID, essay.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.content.GradingInput(f.staff, r.ID, essay.ID); !errors.Is(err, assessment.ErrCannotGrade) || !strings.Contains(err.Error(), "the question was deleted") {
		t.Errorf("the answer of a deleted question: %v", err)
	}
}

// TestReadingAResultIsOneRoundTrip holds reading a result with its answers
// to one round trip (the result and its answers in one batch).
func TestReadingAResultIsOneRoundTrip(t *testing.T) {
	trips := &storetest.RoundTrips{}
	f := newFixture(t, store.WithTracer(trips))
	r := f.submit(t, true)
	before := trips.Count()
	got, err := f.content.Result(f.staff, f.exam.ID, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := trips.Count() - before; n != 1 {
		t.Errorf("reading a result took %d round trips, want 1", n)
	}
	if got.ID != r.ID || got.Status != assessment.StatusGrading || len(got.Answers) != len(f.qs) {
		t.Fatalf("read %+v", got)
	}
	if _, err := f.content.Result(f.staff, f.exam.ID, "res_01JD3M4Q9ZB8K1T7W2X5C6V0ZZ"); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("an unknown result: %v, want not found", err)
	}
}

// TestSubmissionRacingADeletion deletes the exam, then the student, while
// a submission is between its reads and its write, with the exam's paper
// read afresh and from the cache: the submission is answered as the next
// one would be, not as a server fault.
func TestSubmissionRacingADeletion(t *testing.T) {
	for _, c := range []struct {
		name, sql  string
		of         func(fixture) string
		kind       errs.Kind
		reason     string
		cachedFrom bool
	}{
		{"exam", `DELETE FROM exams WHERE id = $1`, func(f fixture) string { return f.exam.ID }, errs.KindNotFound, "EXAM_NOT_FOUND", false},
		{"exam, cached paper", `DELETE FROM exams WHERE id = $1`, func(f fixture) string { return f.exam.ID }, errs.KindNotFound, "EXAM_NOT_FOUND", true},
		{"student", `DELETE FROM users WHERE id = $1`, func(f fixture) string { return f.student }, errs.KindInvalid, "INVALID_ARGUMENT", false},
		{"student, cached paper", `DELETE FROM users WHERE id = $1`, func(f fixture) string { return f.student }, errs.KindInvalid, "INVALID_ARGUMENT", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.cachedFrom {
				f.submit(t, false)
			}
			err := storetest.DeleteDuring(t, f.url, c.sql, []any{c.of(f)}, func() error {
				_, err := f.content.SubmitResult(f.staff, f.exam.ID, assessment.NewResult{UserID: f.student,
					Answers: []assessment.NewAnswer{{QuestionID: f.qs[0].ID, Value: true}}})
				return err
			})
			if e, ok := errs.As(err); !ok || e.Kind != c.kind || e.Reason != c.reason {
				t.Fatalf("submission racing the deletion of its %s: %v", c.name, err)
			}
		})
	}
}

// TestCorrectionsOfOneResultAtOnce corrects every answer of a result in
// concurrent requests, as a review screen saving each field does: each
// succeeds, and the result's score is the sum of its answers'. They used
// to deadlock on the results summary's sums (500s).
func TestCorrectionsOfOneResultAtOnce(t *testing.T) {
	f := newEmptyFixture(t)
	var answers []assessment.NewAnswer
	for i := range 6 {
		q, err := f.content.CreateQuestion(f.staff, f.exam.ID, assessment.NewQuestion{Type: assessment.TypeTrueFalse,
			Prompt: fmt.Sprintf("Statement %d is true.", i), Config: map[string]any{"correct": true}})
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, assessment.NewAnswer{QuestionID: q.ID, Value: false})
	}
	for range 3 {
		r, err := f.content.SubmitResult(f.staff, f.exam.ID, assessment.NewResult{UserID: f.student, Answers: answers})
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, len(answers))
		for _, a := range answers {
			go func() {
				_, err := f.content.CorrectAnswer(f.staff, r.ID, a.QuestionID, true)
				errc <- err
			}()
		}
		for range answers {
			if err := <-errc; err != nil {
				t.Fatalf("a correction: %v", err)
			}
		}
		if r, err = f.content.Result(f.staff, f.exam.ID, r.ID); err != nil || r.Score != 6 {
			t.Fatalf("result after the corrections: score %v, %v", r.Score, err)
		}
	}
}

// A page of results holds at most PageAnswerBytes of answers (and one
// result more): it ends early, and its token carries on where it ended,
// so following the tokens lists every result once with all its answers.
func TestResultPagesAreBoundedInBytes(t *testing.T) {
	f := newEmptyFixture(t)
	const perQuestion, questions, results = 60 << 10, 16, 10
	var answers []assessment.NewAnswer
	for i := range questions {
		q, err := f.content.CreateQuestion(f.staff, f.exam.ID, assessment.NewQuestion{Type: assessment.TypeEssay, Prompt: fmt.Sprintf("Explain %d.", i)})
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, assessment.NewAnswer{QuestionID: q.ID, Value: strings.Repeat(string(rune('a'+i)), perQuestion)})
	}
	for range results {
		if _, err := f.content.SubmitResult(f.staff, f.exam.ID, assessment.NewResult{UserID: f.student, Answers: answers}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	var pages []int
	for token := ""; ; {
		page, err := paging.Parse(50, token)
		if err != nil {
			t.Fatal(err)
		}
		rs, next, err := f.content.Results(f.staff, f.exam.ID, assessment.ResultFilter{}, page)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, len(rs))
		for _, r := range rs {
			if seen[r.ID] || len(r.Answers) != questions {
				t.Fatalf("result %s listed again or with %d answers", r.ID, len(r.Answers))
			}
			seen[r.ID] = true
		}
		if len(rs)*questions*perQuestion > assessment.PageAnswerBytes+questions*perQuestion+questions*1024 {
			t.Fatalf("a page of %d results of %d KiB of answers", len(rs), questions*perQuestion>>10)
		}
		if token = next; token == "" {
			break
		}
	}
	if len(seen) != results || len(pages) < 2 {
		t.Fatalf("pages of %v results, %d results in all, want %d over more than one page", pages, len(seen), results)
	}
}
