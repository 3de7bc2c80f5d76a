package assessment

import (
	"context"
	"fmt"

	"github.com/assessd/assessd/internal/assessment/quality"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// QualityReport is the quality analysis of one question.
type QualityReport struct {
	QuestionID string
	quality.Report
	// Stats are the item statistics over graded results; nil before any.
	Stats *quality.Stats
}

// Quality analyses a question (spec 2.5, decision 0025): the deterministic
// checks of package quality plus, once graded results exist, its item
// statistics. Both describe the current revision: statistics count only
// answers given to it (decision 0090), since earlier answers measured
// another item.
func (s *Service) Quality(ctx context.Context, examID, id string) (QualityReport, error) {
	if _, err := tenancy.Authorize(ctx, ReadQuestions); err != nil {
		return QualityReport{}, err
	}
	q := s.db.Q(ctx)
	qu, err := s.loadQuestion(ctx, q, examID, id, store.NoLock)
	if err != nil {
		return QualityReport{}, err
	}
	var st quality.Stats
	err = q.QueryRow(ctx, `
		SELECT count(*), coalesce(avg(CASE WHEN a.max_score > 0 THEN a.score / a.max_score ELSE 0 END), 0),
		       corr(a.score, r.score - a.score)
		  FROM result_answers a JOIN results r ON r.id = a.result_id
		 WHERE a.org_id = app_org_id() AND a.exam_id = $1 AND a.question_id = $2 AND a.question_revision = $3
		   AND r.org_id = app_org_id() AND r.status = 'graded'`, examID, id, qu.Revision).
		Scan(&st.Responses, &st.Difficulty, &st.Discrimination)
	if err != nil {
		return QualityReport{}, fmt.Errorf("question statistics: %w", err)
	}
	in := quality.Input{Prompt: qu.Prompt, Config: qu.Config}
	if qu.Def != nil && qu.Def.BuiltIn {
		in.Type = qu.Def.Key
	}
	out := QualityReport{QuestionID: id}
	if st.Responses > 0 {
		in.Stats, out.Stats = &st, &st
	}
	out.Report = quality.Analyze(in)
	if out.Findings == nil {
		out.Findings = []quality.Finding{}
	}
	return out, nil
}
