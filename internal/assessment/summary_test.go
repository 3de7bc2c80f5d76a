package assessment_test

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// TestSummaryAggregatesFollowWrites checks the summary kept on write
// (migration 010) against the same statistics computed from the results
// and answers themselves, after submissions, AI grading, corrections
// (rules and AI) and deletions, and that another organization sees none of
// its aggregate rows.
func TestSummaryAggregatesFollowWrites(t *testing.T) {
	f := newFixture(t)
	ctx := f.staff
	check := func(step string) {
		t.Helper()
		got, err := f.content.Summarize(ctx, f.exam.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := recompute(t, f, ctx)
		if !sameSummary(got, want) {
			t.Fatalf("%s: the kept summary\n%+v\ndiffers from the recomputed\n%+v", step, got, want)
		}
	}
	check("no results")
	var graded, grading []assessment.Result
	for i := range 6 {
		r := f.submit(t, i%3 == 0)
		if r.Status == assessment.StatusGraded {
			graded = append(graded, r)
		} else {
			grading = append(grading, r)
		}
	}
	check("after submissions")
	// Results still grading are counted from the results themselves, not
	// kept in the score counts (decision 0134).
	var kept int
	if err := f.db.Q(ctx).QueryRow(ctx, `SELECT count(*) FROM result_score_counts WHERE status = 'grading'`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 0 || len(grading) == 0 {
		t.Fatalf("%d score count rows of results still grading (%d grading)", kept, len(grading))
	}

	// AI grading finishes one result graded (partial credit) and fails another.
	if err := f.content.RecordGrade(ctx, grading[0].ID, f.qs[3].ID, 0.5, "ok", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.content.FinishResult(ctx, grading[0].ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.content.FinishResult(ctx, grading[1].ID, map[string]string{f.qs[3].ID: "no"}); err != nil {
		t.Fatal(err)
	}
	check("after AI grading")

	// A rules correction moves a graded result's score; an essay correction
	// sends a graded result back to grading.
	if _, err := f.content.CorrectAnswer(ctx, graded[0].ID, f.qs[1].ID, false); err != nil {
		t.Fatal(err)
	}
	check("after a rules correction")
	if _, err := f.content.CorrectAnswer(ctx, grading[0].ID, f.qs[3].ID, "Because, really."); err != nil {
		t.Fatal(err)
	}
	check("after an AI correction")

	// A second student's results come and go with the student.
	other, err := f.ten.CreateUser(ctx, tenancy.NewUser{Email: "o@school.test", Name: "O", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.content.SubmitResult(ctx, f.exam.ID, assessment.NewResult{UserID: other.ID,
		Answers: []assessment.NewAnswer{{QuestionID: f.qs[0].ID, Value: true}}}); err != nil {
		t.Fatal(err)
	}
	check("after another student's result")
	if err := f.ten.DeleteUser(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	check("after deleting that student")

	// Another organization sees none of the aggregate rows.
	org, err := f.ten.CreateOrg(context.Background(), tenancy.NewOrg{Name: "Other", Country: "DE", Plan: tenancy.PlanPro})
	if err != nil {
		t.Fatal(err)
	}
	octx := store.WithOrg(context.Background(), org.ID)
	var n int
	if err := f.db.Q(octx).QueryRow(octx, `SELECT (SELECT count(*) FROM result_score_counts) + (SELECT count(*) FROM question_score_sums)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("another organization sees %d aggregate rows", n)
	}
	if _, err := f.db.Q(octx).Exec(octx, `UPDATE result_score_counts SET n = 0`); err == nil {
		t.Fatal("the application may write the aggregates directly")
	}

	// Deleting the exam takes its aggregates along.
	if err := f.content.DeleteExam(ctx, f.exam.ID); err != nil {
		t.Fatal(err)
	}
	caller, _ := tenancy.CallerFrom(ctx)
	sctx := store.WithOrg(context.Background(), caller.OrgID)
	if err := f.db.Q(sctx).QueryRow(sctx, `SELECT (SELECT count(*) FROM result_score_counts) + (SELECT count(*) FROM question_score_sums)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d aggregate rows outlive their exam", n)
	}
}

// recompute is the summary computed from every result and answer, as it
// was before the aggregates were kept (decision 0024).
func recompute(t *testing.T, f fixture, ctx context.Context) assessment.Summary {
	t.Helper()
	sum := assessment.Summary{ExamID: f.exam.ID, Histogram: make([]assessment.Bucket, 10), Questions: []assessment.QuestionStats{}}
	for i := range sum.Histogram {
		sum.Histogram[i] = assessment.Bucket{FromPercent: float64(i * 10), ToPercent: float64(i*10 + 10)}
	}
	err := f.db.Tx(ctx, func(ctx context.Context) error {
		q := f.db.Q(ctx)
		if err := q.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM results WHERE exam_id = $1),
			       count(*), coalesce(avg(score), 0), coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY score), 0),
			       coalesce(stddev_pop(score), 0), coalesce(min(score), 0), coalesce(max(score), 0)
			  FROM results WHERE exam_id = $1 AND status = 'graded'`, f.exam.ID).
			Scan(&sum.Count, &sum.GradedCount, &sum.Mean, &sum.Median, &sum.StdDev, &sum.Min, &sum.Max); err != nil {
			return err
		}
		rows, err := q.Query(ctx, `
			SELECT least(floor(CASE WHEN max_score > 0 THEN score / max_score ELSE 0 END * 10), 9)::int, count(*)
			  FROM results WHERE exam_id = $1 AND status = 'graded' GROUP BY 1`, f.exam.ID)
		if err != nil {
			return err
		}
		for rows.Next() {
			var b, n int
			if err := rows.Scan(&b, &n); err != nil {
				return err
			}
			sum.Histogram[b].Count = n
		}
		if rows.Err() != nil {
			return rows.Err()
		}
		rows, err = q.Query(ctx, `
			SELECT a.question_id, count(*), avg(a.score), avg(CASE WHEN a.max_score > 0 THEN a.score / a.max_score ELSE 0 END),
			       corr(a.score, r.score - a.score)
			  FROM result_answers a JOIN results r ON r.id = a.result_id
			 WHERE a.exam_id = $1 AND r.status = 'graded'
			 GROUP BY a.question_id ORDER BY min(a.position), a.question_id`, f.exam.ID)
		if err != nil {
			return err
		}
		for rows.Next() {
			var st assessment.QuestionStats
			if err := rows.Scan(&st.QuestionID, &st.Responses, &st.MeanScore, &st.Difficulty, &st.Discrimination); err != nil {
				return err
			}
			sum.Questions = append(sum.Questions, st)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func sameSummary(a, b assessment.Summary) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)) }
	if a.ExamID != b.ExamID || a.Count != b.Count || a.GradedCount != b.GradedCount || !near(a.Mean, b.Mean) ||
		!near(a.Median, b.Median) || !near(a.StdDev, b.StdDev) || !near(a.Min, b.Min) || !near(a.Max, b.Max) ||
		!reflect.DeepEqual(a.Histogram, b.Histogram) || len(a.Questions) != len(b.Questions) {
		return false
	}
	for i, q := range a.Questions {
		w := b.Questions[i]
		if q.QuestionID != w.QuestionID || q.Responses != w.Responses || !near(q.MeanScore, w.MeanScore) ||
			!near(q.Difficulty, w.Difficulty) || (q.Discrimination == nil) != (w.Discrimination == nil) ||
			(q.Discrimination != nil && !near(*q.Discrimination, *w.Discrimination)) {
			return false
		}
	}
	return true
}

// TestWritesReadOnlyTheirOwnResult holds the summary triggers to looking
// up a result by its key: a submission, or a teacher's correction, reads as
// many rows of results with thousands of graded results in the exam as
// with a few. (Two triggers once looked the result up together with its
// status, which the partial index of graded results could serve as a full
// scan, and the planner chose it whenever it took results for small, as in
// a plan cached while the table was young: each write then cost PostgreSQL
// time in proportion to the graded results already there, 5 ms of CPU per
// submission at 7,000.) It all runs in one transaction, so on one
// connection, whose cached plans are made while results is young.
func TestWritesReadOnlyTheirOwnResult(t *testing.T) {
	f := newFixture(t)
	err := f.db.Tx(f.staff, func(ctx context.Context) error {
		// resultRowsRead runs write and counts the rows of results it read
		// (the view counts since the connection last reported its
		// statistics, hence the difference).
		resultRowsRead := func(write func()) int64 {
			t.Helper()
			var before, after int64
			read := `SELECT coalesce(sum(seq_tup_read + idx_tup_fetch), 0) FROM pg_stat_xact_user_tables WHERE relname = 'results'`
			if err := f.db.Q(ctx).QueryRow(ctx, read).Scan(&before); err != nil {
				t.Fatal(err)
			}
			write()
			if err := f.db.Q(ctx).QueryRow(ctx, read).Scan(&after); err != nil {
				t.Fatal(err)
			}
			return after - before
		}
		writes := []struct {
			name  string
			write func()
		}{
			{"a submission scored by rules", func() { f.submitIn(t, ctx, false) }},
			{"a submission awaiting AI grading", func() { f.submitIn(t, ctx, true) }},
			{"a correction", func() {
				r := f.submitIn(t, ctx, false)
				if _, err := f.content.CorrectAnswer(ctx, r.ID, f.qs[1].ID, false); err != nil {
					t.Fatal(err)
				}
			}},
		}
		// More than five times each, so that PostgreSQL settles on the
		// plans it keeps for the connection.
		young := make([]int64, len(writes))
		for range 6 {
			for i, w := range writes {
				young[i] = resultRowsRead(w.write)
			}
		}
		if _, err := f.db.Q(ctx).Exec(ctx, `
			INSERT INTO results (id, org_id, exam_id, user_id, status, score, max_score, graded_at)
			SELECT 'res_seed' || i, app_org_id(), $1, $2, 'graded', i % 4, 3, now() FROM generate_series(1, 3000) i`,
			f.exam.ID, f.student); err != nil {
			return err
		}
		for i, w := range writes {
			if read := resultRowsRead(w.write); read > young[i] {
				t.Errorf("%s read %d rows of results among 3,000 graded ones, %d among a few", w.name, read, young[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
