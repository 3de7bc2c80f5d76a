package assessment

import (
	"context"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
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

// Summarize reads an exam's summary from the aggregates the database keeps
// on every write to its finished results and their answers (migration 010,
// decisions 0117 and 0134): a few rows per exam (and shard) whatever the
// number of results.
func (s *Service) Summarize(ctx context.Context, examID string) (Summary, error) {
	if _, err := tenancy.Authorize(ctx, ReadSummaries); err != nil {
		return Summary{}, err
	}
	var (
		sum    Summary
		scores []scoreCount
	)
	err := s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if _, err := s.loadExam(ctx, q, "examId", examID, store.NoLock); err != nil {
			return err
		}
		// The counts keep finished results; those still grading are
		// counted from their partial index (migration 016).
		rows, err := q.Query(ctx, `
			SELECT status = 'graded', score, max_score, sum(n)::int8 FROM result_score_counts
			 WHERE org_id = app_org_id() AND exam_id = $1
			 GROUP BY 1, 2, 3 HAVING sum(n) > 0
			UNION ALL
			SELECT false, 0, 0, count(*) FROM results
			 WHERE org_id = app_org_id() AND exam_id = $1 AND status = 'grading' HAVING count(*) > 0
			 ORDER BY score`, examID)
		if err != nil {
			return fmt.Errorf("summarize: %w", err)
		}
		if scores, err = pgx.CollectRows(rows, pgx.RowToStructByPos[scoreCount]); err != nil {
			return fmt.Errorf("summarize: %w", err)
		}
		// Pearson's r from the sums: (n Σxy - Σx Σy) / sqrt((n Σxx - Σx²)(n Σyy - Σy²)),
		// null when either side does not vary.
		rows, err = q.Query(ctx, `
			SELECT question_id, n::int8, (sum_x / n)::float8, (sum_fraction / n)::float8,
			       CASE WHEN vx > 0 AND vy > 0 THEN ((n * sum_xy - sum_x * sum_y) / sqrt(vx * vy))::float8 END
			  FROM (SELECT question_id, min(position) AS position, sum(n) AS n, sum(sum_x) AS sum_x, sum(sum_y) AS sum_y,
			               sum(sum_xy) AS sum_xy, sum(sum_fraction) AS sum_fraction,
			               sum(n) * sum(sum_xx) - sum(sum_x) ^ 2 AS vx, sum(n) * sum(sum_yy) - sum(sum_y) ^ 2 AS vy
			          FROM question_score_sums
			         WHERE org_id = app_org_id() AND exam_id = $1 AND n > 0
			         GROUP BY question_id) s
			 ORDER BY position, question_id`, examID)
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
	if err != nil {
		return Summary{}, err
	}
	sum.ExamID = examID
	summarizeScores(&sum, scores)
	return sum, nil
}

// scoreCount is how many results have one status (graded or not), score
// and maximum.
type scoreCount struct {
	Graded          bool
	Score, MaxScore float64
	N               int
}

// summarizeScores fills the counts, score statistics and histogram from
// scores, sorted by score, as the SQL aggregates over the results would:
// avg, percentile_cont(0.5), stddev_pop, min, max over graded results.
func summarizeScores(sum *Summary, scores []scoreCount) {
	sum.Histogram = make([]Bucket, 10)
	for i := range sum.Histogram {
		sum.Histogram[i] = Bucket{FromPercent: float64(i * 10), ToPercent: float64(i*10 + 10)}
	}
	var total float64
	for _, c := range scores {
		sum.Count += c.N
		if !c.Graded {
			continue
		}
		if sum.GradedCount == 0 {
			sum.Min = c.Score
		}
		sum.GradedCount += c.N
		sum.Max = c.Score
		total += c.Score * float64(c.N)
		fraction := 0.0
		if c.MaxScore > 0 {
			fraction = c.Score / c.MaxScore
		}
		sum.Histogram[max(min(int(math.Floor(fraction*10)), 9), 0)].Count += c.N
	}
	if sum.GradedCount == 0 {
		return
	}
	n := float64(sum.GradedCount)
	sum.Mean = total / n
	var squares float64
	for _, c := range scores {
		if c.Graded {
			d := c.Score - sum.Mean
			squares += d * d * float64(c.N)
		}
	}
	sum.StdDev = math.Sqrt(squares / n)
	// The median interpolates between the scores at ranks floor and ceil of
	// (n-1)/2 (0-based), as percentile_cont(0.5) does.
	rank := (n - 1) / 2
	lo, hi := int(math.Floor(rank)), int(math.Ceil(rank))
	var loScore, hiScore float64
	seen := 0
	for _, c := range scores {
		if !c.Graded {
			continue
		}
		if seen <= lo && lo < seen+c.N {
			loScore = c.Score
		}
		if seen <= hi && hi < seen+c.N {
			hiScore = c.Score
			break
		}
		seen += c.N
	}
	sum.Median = loScore + (hiScore-loScore)*(rank-float64(lo))
}
