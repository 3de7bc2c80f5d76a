package assessment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/assessment"
)

// TestSummaryWritersOfOneShardTakeTurns interleaves a teacher's correction
// of a graded result with a rules-scored submission landing in the same
// shard of the exam's summary at the score the correction gives: the
// correction changes an answer, the submission starts, then the correction
// moves its result. The summary's triggers used to lock the shard's rows
// crosswise (the correction a question's sum, then a score count; the
// submission that count, then the sums), and PostgreSQL aborted one of them
// as a deadlock. Each now takes its shard's lock before touching a row, so
// the submission waits for the correction and both commit.
func TestSummaryWritersOfOneShardTakeTurns(t *testing.T) {
	f := newEmptyFixture(t)
	var answers []assessment.NewAnswer
	for i := range 2 {
		q, err := f.content.CreateQuestion(f.staff, f.exam.ID, assessment.NewQuestion{Type: assessment.TypeTrueFalse,
			Prompt: fmt.Sprintf("Statement %d is true.", i), Config: map[string]any{"correct": true}})
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, assessment.NewAnswer{QuestionID: q.ID, Value: false})
	}
	corrected, err := f.content.SubmitResult(f.staff, f.exam.ID, assessment.NewResult{UserID: f.student, Answers: answers})
	if err != nil || corrected.Status != assessment.StatusGraded {
		t.Fatalf("submit: %+v, %v", corrected, err)
	}

	ctx := context.Background()
	teacher, submission := connect(t, f.url), connect(t, f.url)
	// The submission's id falls in the corrected result's shard.
	var submitted string
	if err := teacher.QueryRow(ctx, `SELECT 'res_turns_' || n FROM generate_series(1, 1000) n
		WHERE summary_shard('res_turns_' || n) = summary_shard($1) LIMIT 1`, corrected.ID).Scan(&submitted); err != nil {
		t.Fatal(err)
	}

	correction, err := teacher.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = correction.Rollback(ctx) }()
	if _, err := correction.Exec(ctx, `UPDATE result_answers SET score = max_score WHERE result_id = $1 AND question_id = $2`,
		corrected.ID, answers[1].QuestionID); err != nil {
		t.Fatal(err)
	}

	submitting := make(chan error, 1)
	go func() {
		submitting <- pgx.BeginFunc(ctx, submission, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO results (id, org_id, exam_id, user_id, status, score, max_score)
				SELECT $1, org_id, exam_id, user_id, 'graded', score + 1, max_score FROM results WHERE id = $2`, submitted, corrected.ID); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO result_answers (result_id, question_id, org_id, exam_id, position, status, score, max_score)
				SELECT $1, question_id, org_id, exam_id, position, 'graded', max_score, max_score FROM result_answers WHERE result_id = $2 AND question_id = $3
				UNION ALL
				SELECT $1, question_id, org_id, exam_id, position, 'graded', 0, max_score FROM result_answers WHERE result_id = $2 AND question_id <> $3`,
				submitted, corrected.ID, answers[1].QuestionID)
			return err
		})
	}()
	waitUntilBlocked(t, teacher)

	if _, err := correction.Exec(ctx, `UPDATE results SET score = score + 1 WHERE id = $1`, corrected.ID); err != nil {
		t.Fatalf("the correction's result: %v", err)
	}
	if err := correction.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-submitting; err != nil {
		t.Fatalf("the submission: %v", err)
	}
	var n int
	if err := teacher.QueryRow(ctx, `SELECT n FROM result_score_counts c JOIN results r ON r.exam_id = c.exam_id
		AND c.shard = summary_shard(r.id) AND c.status = r.status AND c.score = r.score AND c.max_score = r.max_score
		WHERE r.id = $1`, corrected.ID).Scan(&n); err != nil || n != 2 {
		t.Fatalf("both results at the corrected score in the shard's counts: n = %d, %v", n, err)
	}
}

// TestDeletionTakesResultsBeforeTheirShards deletes a student, then an
// exam, whose results cascade away one by one, while a teacher corrects
// the second of two of them in one shard: the correction holds its
// result's row and then wants the shard. The deletion used to take the
// shard with the first result and then wait for the second's row, and
// PostgreSQL aborted one as a deadlock (DELETE /users answered 500). It
// now locks all the results first, waits for the correction, and both
// commit.
func TestDeletionTakesResultsBeforeTheirShards(t *testing.T) {
	for name, remove := range map[string]func(fixture) error{
		"student": func(f fixture) error { return f.ten.DeleteUser(f.staff, f.student) },
		"exam":    func(f fixture) error { return f.content.DeleteExam(f.staff, f.exam.ID) },
	} {
		t.Run(name, func(t *testing.T) { deleteDuringCorrection(t, remove) })
	}
}

func deleteDuringCorrection(t *testing.T, remove func(fixture) error) {
	f := newEmptyFixture(t)
	q, err := f.content.CreateQuestion(f.staff, f.exam.ID, assessment.NewQuestion{Type: assessment.TypeTrueFalse,
		Prompt: "The statement is true.", Config: map[string]any{"correct": true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	teacher := connect(t, f.url)
	// Two results of the student in one shard: the first goes first.
	byShard := map[int]string{}
	var first, second string
	for second == "" {
		r, err := f.content.SubmitResult(f.staff, f.exam.ID, assessment.NewResult{UserID: f.student,
			Answers: []assessment.NewAnswer{{QuestionID: q.ID, Value: false}}})
		if err != nil {
			t.Fatal(err)
		}
		var shard int
		if err := teacher.QueryRow(ctx, `SELECT summary_shard($1)`, r.ID).Scan(&shard); err != nil {
			t.Fatal(err)
		}
		if byShard[shard] != "" {
			first, second = byShard[shard], r.ID
		}
		byShard[shard] = r.ID
	}

	correction, err := teacher.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = correction.Rollback(ctx) }()
	if _, err := correction.Exec(ctx, `SELECT FROM results WHERE id = $1 FOR UPDATE`, second); err != nil {
		t.Fatal(err)
	}
	deleting := make(chan error, 1)
	go func() { deleting <- remove(f) }()
	waitUntilBlocked(t, teacher)
	if _, err := correction.Exec(ctx, `UPDATE result_answers SET score = max_score WHERE result_id = $1`, second); err != nil {
		t.Fatalf("the correction's answer: %v", err)
	}
	if _, err := correction.Exec(ctx, `UPDATE results SET score = max_score WHERE id = $1`, second); err != nil {
		t.Fatalf("the correction's result: %v", err)
	}
	if err := correction.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-deleting; err != nil {
		t.Fatalf("the deletion: %v", err)
	}
	var left, counted int
	if err := teacher.QueryRow(ctx, `SELECT (SELECT count(*) FROM results WHERE id IN ($1, $2)),
		(SELECT coalesce(sum(n), 0) FROM result_score_counts WHERE exam_id = $3)`, first, second, f.exam.ID).Scan(&left, &counted); err != nil {
		t.Fatal(err)
	}
	if left != 0 || counted != 0 {
		t.Fatalf("after the deletion: %d of the results left, the summary counts %d", left, counted)
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// waitUntilBlocked returns once another session of c's database waits for
// a lock.
func waitUntilBlocked(t *testing.T, c *pgx.Conn) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var waiting bool
		if err := c.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
	}
	t.Fatal("the other transaction never waited for the correction")
}
