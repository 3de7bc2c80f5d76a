package lti

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/store"
)

// Assignment and Grade Services 2.0 (decision 0204): a learner's launch of
// a link with a line item names where the scores of their results of the
// linked assignment go; each time such a result is graded, the grading's
// transaction adds an lti_score outbox row, and the ScoreResult workflow
// posts the score with a token of the platform's.

// ErrPlatformRefused is a platform's refusal of a request the tool made
// (a 4xx other than a rate limit): the same request would be refused
// again.
var ErrPlatformRefused = errPlatformRefused

// scoreMediaType is the media type of a posted score (AGS 2.0, 3.4).
const scoreMediaType = "application/vnd.ims.lis.v1.score+json"

// rememberGradeLink records where the scores of l's learner on l's
// assignment go: the line item of the link, when the platform offers one
// and grants the score scope. A line item URL the tool could not post to
// is left unrecorded, with a log line: the launch itself is fine.
func (s *Service) rememberGradeLink(ctx context.Context, l Launch) error {
	if l.AGS == nil || l.AGS.LineItem == "" || l.AssignmentID == "" || !slices.Contains(l.AGS.Scope, ScopeScore) {
		return nil
	}
	if _, err := scoresURL(l.AGS.LineItem); err != nil {
		slog.WarnContext(ctx, "LTI launch with an unusable line item", "platform", l.Platform.ID, "err", err)
		return nil
	}
	// A foreign or unknown assignment records nothing: the launch then
	// refuses to open it.
	_, err := s.db.Q(ctx).Exec(ctx, `
		INSERT INTO lti_grade_links (org_id, assignment_id, user_id, platform_id, lineitem_url, subject)
		SELECT app_org_id(), a.id, $2, $3, $4, $5 FROM assignments a WHERE a.org_id = app_org_id() AND a.id = $1
		ON CONFLICT (org_id, assignment_id, user_id) DO UPDATE
		   SET platform_id = excluded.platform_id, lineitem_url = excluded.lineitem_url, subject = excluded.subject, updated_at = now()`,
		l.AssignmentID, l.UserID, l.Platform.ID, l.AGS.LineItem, l.Subject)
	if err != nil {
		return fmt.Errorf("lti: remember the launch's line item: %w", err)
	}
	return nil
}

// scoresURL is the scores endpoint of a line item: its path with /scores
// appended, its query kept (AGS 2.0, 3.4).
func scoresURL(lineItem string) (string, error) {
	if len(lineItem) > egress.MaxURLLength {
		return "", errors.New("lti: the line item URL is too long")
	}
	u, err := url.Parse(lineItem)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
		return "", fmt.Errorf("lti: the line item %q is not an http(s) URL", lineItem)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/scores"
	u.RawPath, u.Fragment = "", ""
	return u.String(), nil
}

// queueScoreSQL counts a grading of the result in its line item's score
// row, made on its first grading, and arms the row's outbox entry again.
// A result of no assignment, or of one its student never launched from a
// line item, writes nothing.
const queueScoreSQL = `
	WITH wanted AS (
	  INSERT INTO lti_scores (result_id, org_id, platform_id, lineitem_url, subject)
	  SELECT r.id, app_org_id(), l.platform_id, l.lineitem_url, l.subject
	    FROM results r JOIN lti_grade_links l ON l.org_id = app_org_id() AND l.assignment_id = r.assignment_id AND l.user_id = r.user_id
	   WHERE r.org_id = app_org_id() AND r.id = $1
	  ON CONFLICT (result_id) DO UPDATE
	     SET wanted = lti_scores.wanted + 1, failed = '', platform_id = excluded.platform_id,
	         lineitem_url = excluded.lineitem_url, subject = excluded.subject
	  RETURNING result_id
	)
	SELECT outbox_add($2, w.result_id, r.region, true) FROM wanted w JOIN results r ON r.org_id = app_org_id() AND r.id = w.result_id`

// QueueGraded adds to b, the batch of the transaction that finished
// result resultID's grading, what posts its score to the line item its
// student launched it from, if any: assessment's hook of finished
// gradings.
func QueueGraded(b *pgx.Batch, resultID string) {
	b.Queue(queueScoreSQL, resultID, string(outbox.KindLTIScore))
}

// score is a result's score as its line item awaits it.
type score struct {
	platformID, lineItem, subject string
	wanted, posted                int
	status                        string
	given, maximum                float64
}

// PostScore posts the score of result resultID to its line item, when a
// grading of it is not posted yet (AGS 2.0, 3.4), and records it: the
// count of gradings it answers, the lti.score_posted audit entry. A
// result gone, or none awaiting a post, is done. The platform's refusal
// is ErrPlatformRefused; anything else is worth retrying.
func (s *Service) PostScore(ctx context.Context, resultID string) error {
	var sc score
	err := s.db.Q(ctx).QueryRow(ctx, `
		SELECT s.platform_id, s.lineitem_url, s.subject, s.wanted, s.posted, r.status, r.score, r.max_score
		  FROM lti_scores s JOIN results r ON r.org_id = app_org_id() AND r.id = s.result_id
		 WHERE s.org_id = app_org_id() AND s.result_id = $1`, resultID).
		Scan(&sc.platformID, &sc.lineItem, &sc.subject, &sc.wanted, &sc.posted, &sc.status, &sc.given, &sc.maximum)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lti: read the score to post: %w", err)
	}
	if sc.posted >= sc.wanted || sc.status == "grading" {
		// Posted, or graded again since: the finished grading queues it.
		return nil
	}
	p, err := s.loadPlatform(ctx, s.db.Q(ctx), sc.platformID, store.NoLock)
	if err != nil {
		return err
	}
	body := scoreBody(sc, s.now().UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	err = s.sendScore(ctx, p, sc.lineItem, body)
	org, _ := store.OrgID(ctx)
	s.metrics.score(org, err)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		tag, err := s.db.Q(ctx).Exec(ctx, `
			UPDATE lti_scores SET posted = $2, posted_at = now(), failed = ''
			 WHERE org_id = app_org_id() AND result_id = $1 AND posted < $2`, resultID, sc.wanted)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: "lti.score_posted", Actor: audit.Actor{Kind: audit.ActorSystem, ID: p.ID},
			Target: audit.Target{Type: "result", ID: resultID}, After: map[string]any{"platformId": p.ID, "lineItem": sc.lineItem,
				"userId": sc.subject, "scoreGiven": body["scoreGiven"], "scoreMaximum": body["scoreMaximum"],
				"gradingProgress": body["gradingProgress"], "grading": sc.wanted}})
	})
}

// scoreBody is the Score of sc at timestamp: the total of a graded result,
// or a failed grading without one.
func scoreBody(sc score, timestamp string) map[string]any {
	b := map[string]any{"userId": sc.subject, "timestamp": timestamp, "activityProgress": "Completed", "gradingProgress": "FullyGraded"}
	if sc.status == "failed" {
		b["gradingProgress"] = "Failed"
		return b
	}
	b["scoreGiven"], b["scoreMaximum"] = sc.given, sc.maximum
	if sc.maximum <= 0 {
		// AGS requires a positive maximum; an exam of no points is complete.
		b["scoreMaximum"] = 1.0
	}
	return b
}

// sendScore posts body to lineItem's scores endpoint.
func (s *Service) sendScore(ctx context.Context, p Platform, lineItem string, body map[string]any) error {
	target, err := scoresURL(lineItem)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPlatformRefused, err)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("lti: encode the score: %w", err)
	}
	resp, err := s.serviceRequest(ctx, p, ScopeScore, http.MethodPost, target, "application/json", scoreMediaType, raw)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	said, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return statusError("score post", resp, said)
}

// UnfinishedScores returns those of resultIDs whose latest grading is not
// posted yet, nor given up: the lti_score route's unfinished subjects.
func (s *Service) UnfinishedScores(ctx context.Context, resultIDs []string) ([]string, error) {
	return store.Strings(ctx, s.db.Q(ctx), `
		SELECT result_id FROM lti_scores
		 WHERE org_id = app_org_id() AND result_id = ANY($1) AND posted < wanted AND failed = ''`, resultIDs)
}

// GiveUpScore records that result resultID's score could not be posted,
// with why, as lti.score_failed; a score posted or given up already is
// left alone. A later grading of the result tries again.
func (s *Service) GiveUpScore(ctx context.Context, resultID, reason string) error {
	if reason == "" {
		reason = "the score could not be posted"
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		var platformID string
		err := s.db.Q(ctx).QueryRow(ctx, `
			UPDATE lti_scores SET failed = left($2, 500)
			 WHERE org_id = app_org_id() AND result_id = $1 AND posted < wanted AND failed = ''
			RETURNING platform_id`, resultID, reason).Scan(&platformID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lti: give up a score: %w", err)
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: "lti.score_failed", Actor: audit.Actor{Kind: audit.ActorSystem, ID: platformID},
			Target: audit.Target{Type: "result", ID: resultID}, Reason: reason, After: map[string]any{"platformId": platformID}})
	})
}
