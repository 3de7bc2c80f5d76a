package assessment

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/tenancy"
)

// Summary is the statistics of an exam's results (decision 0024). Score
// statistics cover graded results only: a result still grading has no
// final score.
type Summary struct {
	ExamID      string
	Count       int // every result, whatever its status
	GradedCount int
	Mean        float64
	Median      float64
	StdDev      float64 // population standard deviation
	Min         float64
	Max         float64
	// Histogram has ten buckets of the score as a percentage of the
	// maximum: [0,10), [10,20), ... [90,100].
	Histogram []Bucket
	Questions []QuestionStats
}

// Bucket is one histogram bar.
type Bucket struct {
	FromPercent float64
	ToPercent   float64
	Count       int
}

// QuestionStats are one question's item statistics over graded results.
type QuestionStats struct {
	QuestionID string
	Responses  int
	MeanScore  float64
	// Difficulty is the mean fraction of the points earned: for an
	// all-or-nothing item, the proportion of correct answers.
	Difficulty float64
	// Discrimination is the corrected item-total correlation (the
	// point-biserial correlation for all-or-nothing items) between the
	// item's score and the rest of the result's score; nil when either
	// does not vary.
	Discrimination *float64
}

// Summarize computes an exam's summary in SQL: aggregates over an index of
// the exam's graded results and one grouped pass over their answers.
func (s *Service) Summarize(ctx context.Context, examID string) (Summary, error) {
	if _, err := tenancy.Authorize(ctx, ReadSummaries); err != nil {
		return Summary{}, err
	}
	sum := Summary{ExamID: examID, Histogram: make([]Bucket, 10), Questions: []QuestionStats{}}
	for i := range sum.Histogram {
		sum.Histogram[i] = Bucket{FromPercent: float64(i * 10), ToPercent: float64(i*10 + 10)}
	}
	err := s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if _, err := s.loadExam(ctx, q, "examId", examID, false); err != nil {
			return err
		}
		err := q.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM results WHERE org_id = app_org_id() AND exam_id = $1),
			       count(*), coalesce(avg(score), 0),
			       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY score), 0),
			       coalesce(stddev_pop(score), 0), coalesce(min(score), 0), coalesce(max(score), 0)
			  FROM results WHERE org_id = app_org_id() AND exam_id = $1 AND status = 'graded'`, examID).
			Scan(&sum.Count, &sum.GradedCount, &sum.Mean, &sum.Median, &sum.StdDev, &sum.Min, &sum.Max)
		if err != nil {
			return fmt.Errorf("summarize: %w", err)
		}
		rows, err := q.Query(ctx, `
			SELECT least(floor(CASE WHEN max_score > 0 THEN score / max_score ELSE 0 END * 10), 9)::int AS bucket, count(*)
			  FROM results WHERE org_id = app_org_id() AND exam_id = $1 AND status = 'graded'
			 GROUP BY bucket`, examID)
		if err != nil {
			return fmt.Errorf("summarize histogram: %w", err)
		}
		var bucket, count int
		if _, err := pgx.ForEachRow(rows, []any{&bucket, &count}, func() error {
			sum.Histogram[max(bucket, 0)].Count += count
			return nil
		}); err != nil {
			return fmt.Errorf("summarize histogram: %w", err)
		}
		rows, err = q.Query(ctx, `
			SELECT a.question_id, count(*), avg(a.score),
			       avg(CASE WHEN a.max_score > 0 THEN a.score / a.max_score ELSE 0 END),
			       corr(a.score, r.score - a.score)
			  FROM result_answers a JOIN results r ON r.id = a.result_id
			 WHERE a.org_id = app_org_id() AND a.exam_id = $1
			   AND r.org_id = app_org_id() AND r.exam_id = $1 AND r.status = 'graded'
			 GROUP BY a.question_id
			 ORDER BY min(a.position), a.question_id`, examID)
		if err != nil {
			return fmt.Errorf("summarize questions: %w", err)
		}
		sum.Questions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (QuestionStats, error) {
			var st QuestionStats
			err := r.Scan(&st.QuestionID, &st.Responses, &st.MeanScore, &st.Difficulty, &st.Discrimination)
			return st, err
		})
		if err != nil {
			return fmt.Errorf("summarize questions: %w", err)
		}
		return nil
	})
	return sum, err
}
