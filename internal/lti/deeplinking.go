package lti

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// DeepLinkingTTL is how long an instructor has to choose what a
// deep-linking request links: a form filled in, not a login's moment.
const DeepLinkingTTL = time.Hour

// deepLinkingKey prefixes the Redis keys of deep-linking requests.
const deepLinkingKey = "assessd:lti:deeplinking:"

// DeepLinkingMessage is the message type of the tool's answer.
const DeepLinkingMessage = "LtiDeepLinkingResponse"

// DeepLinkingRequest is a verified deep-linking launch waiting for the
// instructor's choice, kept in Redis under a random id that only the
// instructor's page holds (decision 0203).
type DeepLinkingRequest struct {
	OrgID        string      `json:"orgId"`
	PlatformID   string      `json:"platformId"`
	DeploymentID string      `json:"deploymentId"`
	UserID       string      `json:"userId"`
	ClassID      string      `json:"classId"`
	Settings     DeepLinking `json:"settings"`
	FrameOrigins []string    `json:"frameOrigins"`
}

// SaveDeepLinking keeps launch l, a deep-linking request, for
// DeepLinkingTTL and returns its id.
func (s *Service) SaveDeepLinking(ctx context.Context, l Launch) (string, error) {
	if s.states.rdb == nil {
		return "", unavailable(errors.New("no Redis configured"))
	}
	req := DeepLinkingRequest{OrgID: l.OrgID, PlatformID: l.Platform.ID, DeploymentID: l.DeploymentID, UserID: l.UserID,
		ClassID: l.ClassID, Settings: *l.DeepLinking, FrameOrigins: l.FrameOrigins}
	data, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("lti: encode deep-linking request: %w", err)
	}
	id := rand.Text()
	if err := s.states.rdb.Set(ctx, deepLinkingKey+id, data, DeepLinkingTTL).Err(); err != nil {
		return "", unavailable(err)
	}
	return id, nil
}

// errDeepLinkingGone is a deep-linking request unknown, expired or
// answered already.
var errDeepLinkingGone = errs.FailedPrecondition("DEEP_LINKING_GONE",
	"This choice expired or was made already: add the content again from your course.")

// DeepLinking returns the deep-linking request id.
func (s *Service) DeepLinking(ctx context.Context, id string) (DeepLinkingRequest, error) {
	var req DeepLinkingRequest
	if s.states.rdb == nil {
		return req, unavailable(errors.New("no Redis configured"))
	}
	if len(id) > maxState {
		return req, errDeepLinkingGone
	}
	data, err := s.states.rdb.Get(ctx, deepLinkingKey+id).Bytes()
	if errors.Is(err, redis.Nil) {
		return req, errDeepLinkingGone
	}
	if err != nil {
		return req, unavailable(err)
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return req, fmt.Errorf("lti: decode deep-linking request: %w", err)
	}
	return req, nil
}

// ClaimDeepLinking takes deep-linking request id for one answer: a form
// posted twice links one item. release gives the claim back when the
// answer could not be made; FinishDeepLinking ends the request once it
// was.
func (s *Service) ClaimDeepLinking(ctx context.Context, id string) (release func(), err error) {
	key := deepLinkingKey + id + ":claimed"
	ok, err := s.states.rdb.SetNX(ctx, key, "1", DeepLinkingTTL).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	if !ok {
		return nil, errDeepLinkingGone
	}
	return func() { s.states.rdb.Del(context.WithoutCancel(ctx), key) }, nil
}

// FinishDeepLinking removes deep-linking request id, answered.
func (s *Service) FinishDeepLinking(ctx context.Context, id string) error {
	if err := s.states.rdb.Del(ctx, deepLinkingKey+id, deepLinkingKey+id+":claimed").Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// ResourceLinkItem is the link a deep-linking response creates: an
// assignment of assessd, graded out of ScoreMaximum.
type ResourceLinkItem struct {
	Title        string
	Text         string
	AssignmentID string
	ScoreMaximum float64
	// Available and Submission bound when the platform shows the link and
	// takes submissions: the assignment's window.
	OpensAt, ClosesAt time.Time
}

// deepLinkingLifetime is how long the response is valid: it is posted at
// once by the instructor's browser.
const deepLinkingLifetime = 5 * time.Minute

// DeepLinkingResponse signs the LtiDeepLinkingResponse answering req with
// item (Deep Linking 2.0, 4.2): an ltiResourceLink content item whose
// custom assignment_id names the assignment and whose lineItem lets the
// platform make the gradebook column; issued by the tool's client id for
// the platform, signed by the tool's current key.
func (s *Service) DeepLinkingResponse(ctx context.Context, req DeepLinkingRequest, item ResourceLinkItem) (string, error) {
	ctx = tenancy.WithCaller(ctx, PlatformCaller(req.OrgID, req.PlatformID))
	p, err := s.loadPlatform(ctx, s.db.Q(ctx), req.PlatformID, store.NoLock)
	if err != nil {
		return "", err
	}
	now := s.now()
	contentItem := map[string]any{
		"type": "ltiResourceLink", "title": item.Title, "url": s.Tool().LaunchURL,
		"custom": map[string]string{CustomAssignment: item.AssignmentID},
		"lineItem": map[string]any{"label": item.Title, "scoreMaximum": item.ScoreMaximum, "resourceId": item.AssignmentID,
			"tag": "assessd"},
		"available":  map[string]string{"startDateTime": item.OpensAt.UTC().Format(time.RFC3339), "endDateTime": item.ClosesAt.UTC().Format(time.RFC3339)},
		"submission": map[string]string{"endDateTime": item.ClosesAt.UTC().Format(time.RFC3339)},
	}
	if item.Text != "" {
		contentItem["text"] = item.Text
	}
	claims := map[string]any{
		"iss": p.ClientID, "aud": []string{p.Issuer}, "azp": p.ClientID, "iat": now.Unix(), "exp": now.Add(deepLinkingLifetime).Unix(),
		"nonce": rand.Text(), ClaimMessageType: DeepLinkingMessage, ClaimVersion: Version, ClaimDeploymentID: req.DeploymentID,
		claimDeepLinkingItems: []any{contentItem},
	}
	if req.Settings.Data != "" {
		claims[claimDeepLinkingData] = req.Settings.Data
	}
	return s.signAssertion(ctx, claims)
}

// The claims of a deep-linking response.
const (
	claimDeepLinkingItems = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
	claimDeepLinkingData  = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
)
