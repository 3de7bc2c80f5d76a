package assessment_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// newBuiltinFixture is an organization and student with an exam of two
// true/false questions (correct: true, then false), whose paper
// SubmitResult may cache.
func newBuiltinFixture(t *testing.T, opts ...store.Option) fixture {
	t.Helper()
	f := newEmptyFixture(t, opts...)
	for _, correct := range []bool{true, false} {
		f.addTrueFalse(t, correct)
	}
	return f
}

func (f *fixture) addTrueFalse(t *testing.T, correct bool) {
	t.Helper()
	q, err := f.content.CreateQuestion(f.staff, f.exam.ID, assessment.NewQuestion{Type: assessment.TypeTrueFalse,
		Prompt: "True or false?", Config: map[string]any{"correct": correct}})
	if err != nil {
		t.Fatal(err)
	}
	f.qs = append(f.qs, q)
}

// answerTrue submits true to every question in ids.
func (f fixture) answerTrue(ids ...string) (assessment.Result, error) {
	answers := make([]assessment.NewAnswer, len(ids))
	for i, id := range ids {
		answers[i] = assessment.NewAnswer{QuestionID: id, Value: true}
	}
	return f.content.SubmitResult(f.staff, f.exam.ID, assessment.NewResult{UserID: f.student, Answers: answers})
}

// TestACachedPaperCostsOneRoundTrip: the first submission to an exam reads
// its paper; the next ones send only the write, and store what a fresh
// read would have scored.
func TestACachedPaperCostsOneRoundTrip(t *testing.T) {
	trips := &storetest.RoundTrips{}
	f := newBuiltinFixture(t, store.WithTracer(trips))
	for i, want := range []int64{2, 1, 1} {
		before := trips.Count()
		r, err := f.answerTrue(f.qs[0].ID, f.qs[1].ID)
		if err != nil {
			t.Fatal(err)
		}
		if n := trips.Count() - before; n != want {
			t.Errorf("submission %d: %d round trips, want %d", i+1, n, want)
		}
		if r.Status != assessment.StatusGraded || r.Score != 1 || r.MaxScore != 2 || r.Region != tenancy.RegionEU {
			t.Errorf("submission %d: %+v", i+1, r)
		}
		stored, err := f.content.Result(f.staff, f.exam.ID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := summary(stored), summary(r); got != want {
			t.Errorf("submission %d returned\n%s\nbut stored\n%s", i+1, want, got)
		}
	}
}

// TestACachedPaperIsNeverScoredStale: after each change a cached paper
// depends on, the next submission is scored as a fresh read would score
// it.
func TestACachedPaperIsNeverScoredStale(t *testing.T) {
	f := newBuiltinFixture(t)
	submit := func(ids ...string) assessment.Result {
		t.Helper()
		r, err := f.answerTrue(ids...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := submit(f.qs[0].ID, f.qs[1].ID); r.Score != 1 {
		t.Fatalf("first submission scored %v, want 1", r.Score)
	}

	edited, err := f.content.UpdateQuestion(f.staff, f.exam.ID, f.qs[1].ID, assessment.QuestionPatch{Config: map[string]any{"correct": true}})
	if err != nil {
		t.Fatal(err)
	}
	r := submit(f.qs[0].ID, f.qs[1].ID)
	if r.Score != 2 || r.Answers[1].QuestionRevision != edited.Revision {
		t.Errorf("after an edit: score %v, answered revision %d; want 2 and %d", r.Score, r.Answers[1].QuestionRevision, edited.Revision)
	}

	f.addTrueFalse(t, true)
	if r := submit(f.qs[0].ID, f.qs[1].ID, f.qs[2].ID); r.Score != 3 || r.MaxScore != 3 {
		t.Errorf("after adding a question: %v of %v, want 3 of 3", r.Score, r.MaxScore)
	}

	if _, err := f.content.ReorderQuestions(f.staff, f.exam.ID, []string{f.qs[2].ID, f.qs[0].ID, f.qs[1].ID}); err != nil {
		t.Fatal(err)
	}
	if r := submit(f.qs[0].ID); r.Answers[0].QuestionID != f.qs[2].ID || r.Answers[1].QuestionID != f.qs[0].ID {
		t.Errorf("after a reorder the answers are in the old order: %s, %s", r.Answers[0].QuestionID, r.Answers[1].QuestionID)
	}

	if err := f.content.DeleteQuestion(f.staff, f.exam.ID, f.qs[2].ID); err != nil {
		t.Fatal(err)
	}
	if r := submit(f.qs[0].ID, f.qs[1].ID); len(r.Answers) != 2 || r.MaxScore != 2 {
		t.Errorf("after deleting a question: %d answers of %v points, want 2 of 2", len(r.Answers), r.MaxScore)
	}
	if _, err := f.answerTrue(f.qs[2].ID); !errs.Is(err, errs.KindInvalid) {
		t.Errorf("an answer to the deleted question: %v, want invalid", err)
	}

	global := tenancy.RegionGlobal
	if _, err := f.ten.UpdateOrg(f.staff, tenancy.OrgPatch{AIRegion: &global}); err != nil {
		t.Fatal(err)
	}
	if r := submit(f.qs[0].ID); r.Region != global {
		t.Errorf("after the region changed the result records %q, want %q", r.Region, global)
	}

	if err := f.ten.DeleteUser(f.staff, f.student); err != nil {
		t.Fatal(err)
	}
	if _, err := f.answerTrue(f.qs[0].ID); !errs.Is(err, errs.KindInvalid) {
		t.Errorf("a submission for a deleted user: %v, want invalid", err)
	}
}

// TestSubmissionCurrentRefusesEachChange calls the write's check with one
// thing differing at a time from what is current.
func TestSubmissionCurrentRefusesEachChange(t *testing.T) {
	f := newBuiltinFixture(t)
	org, err := f.ten.Org(f.staff)
	if err != nil {
		t.Fatal(err)
	}
	ctx := store.WithOrg(context.Background(), org.ID)
	var version int64
	if err := f.db.Q(ctx).QueryRow(ctx, `SELECT paper_version FROM exams WHERE id = $1`, f.exam.ID).Scan(&version); err != nil {
		t.Fatal(err)
	}
	check := func(exam string, version int64, user, region string, events []string) error {
		_, err := f.db.Q(ctx).Exec(ctx, `SELECT submission_current($1, $2, $3, $4, $5)`, exam, version, user, region, events)
		return err
	}
	if err := check(f.exam.ID, version, f.student, tenancy.RegionEU, []string{}); err != nil {
		t.Fatalf("the current paper was refused: %v", err)
	}
	if err := check(f.exam.ID, version, f.student, tenancy.RegionEU, nil); err != nil {
		t.Fatalf("the current paper without subscriptions to check was refused: %v", err)
	}
	for name, err := range map[string]error{
		"an older paper version": check(f.exam.ID, version-1, f.student, tenancy.RegionEU, []string{}),
		"another exam":           check("exm_unknown", version, f.student, tenancy.RegionEU, []string{}),
		"an unknown user":        check(f.exam.ID, version, "usr_unknown", tenancy.RegionEU, []string{}),
		"another region":         check(f.exam.ID, version, f.student, tenancy.RegionGlobal, []string{}),
		"other subscriptions":    check(f.exam.ID, version, f.student, tenancy.RegionEU, []string{"result.graded"}),
	} {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "AS001" {
			t.Errorf("%s: %v, want SQLSTATE AS001", name, err)
		}
	}
}

// TestQuestionWritersDoNotDeadlock edits and reorders one exam's questions
// concurrently: each writer locks the exam before a question, as the
// paper version's trigger does, so none waits for another in the opposite
// order.
func TestQuestionWritersDoNotDeadlock(t *testing.T) {
	f := newBuiltinFixture(t)
	const rounds = 20
	var wg sync.WaitGroup
	failures := make(chan error, 2*rounds)
	wg.Go(func() {
		for i := range rounds {
			points := float64(i + 1)
			if _, err := f.content.UpdateQuestion(f.staff, f.exam.ID, f.qs[i%2].ID, assessment.QuestionPatch{Points: &points}); err != nil {
				failures <- err
			}
		}
	})
	wg.Go(func() {
		for i := range rounds {
			order := []string{f.qs[i%2].ID, f.qs[1-i%2].ID}
			if _, err := f.content.ReorderQuestions(f.staff, f.exam.ID, order); err != nil {
				failures <- err
			}
		}
	})
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
}

// TestASubmissionInATransactionReadsItsPaper: inside a caller's
// transaction (as a scan submits each student's sheet) a refusal is an
// answer, not an aborted transaction, and the transaction goes on.
func TestASubmissionInATransactionReadsItsPaper(t *testing.T) {
	f := newBuiltinFixture(t)
	if _, err := f.answerTrue(f.qs[0].ID); err != nil { // caches the paper
		t.Fatal(err)
	}
	other, err := f.ten.CreateUser(f.staff, tenancy.NewUser{Email: "o@school.test", Name: "O", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.ten.DeleteUser(f.staff, f.student); err != nil {
		t.Fatal(err)
	}
	err = f.db.Tx(f.staff, func(ctx context.Context) error {
		_, err := f.content.SubmitResult(ctx, f.exam.ID, assessment.NewResult{UserID: f.student,
			Answers: []assessment.NewAnswer{{QuestionID: f.qs[0].ID, Value: true}}})
		if !errs.Is(err, errs.KindInvalid) {
			t.Errorf("a deleted student's submission in a transaction: %v, want invalid", err)
		}
		r, err := f.content.SubmitResult(ctx, f.exam.ID, assessment.NewResult{UserID: other.ID,
			Answers: []assessment.NewAnswer{{QuestionID: f.qs[0].ID, Value: true}}})
		if err == nil && r.Score != 1 {
			t.Errorf("the next submission in the transaction scored %v, want 1", r.Score)
		}
		return err
	})
	if err != nil {
		t.Fatalf("the transaction did not go on after a refusal: %v", err)
	}
}

// TestALargePaperIsCached: an exam of 400 KB of prompts (past the former
// 256 KiB bound) costs one round trip a submission once its paper is read.
func TestALargePaperIsCached(t *testing.T) {
	trips := &storetest.RoundTrips{}
	f := newEmptyFixture(t, store.WithTracer(trips))
	var ids []string
	for i := range 40 {
		q, err := f.content.CreateQuestion(f.staff, f.exam.ID, assessment.NewQuestion{Type: assessment.TypeTrueFalse,
			Prompt: fmt.Sprintf("%d. %s True or false?", i, strings.Repeat("A long premise. ", 600)), Config: map[string]any{"correct": true}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, q.ID)
	}
	for i, want := range []int64{2, 1, 1} {
		before := trips.Count()
		r, err := f.answerTrue(ids...)
		if err != nil {
			t.Fatal(err)
		}
		if n := trips.Count() - before; n != want || r.Score != 40 {
			t.Fatalf("submission %d: %d round trips, score %v; want %d and 40", i, n, r.Score, want)
		}
	}
}
