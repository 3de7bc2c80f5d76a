package ltiplatform

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The scopes of the Advantage services the platform grants (AGS 2.0,
// NRPS 2.0).
const (
	ScopeLineItem    = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
	ScopeScore       = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
	ScopeMemberships = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
)

// TokenLifetime is the expires_in of the platform's access tokens.
const TokenLifetime = time.Hour

// rosterPageSize is how many members one memberships page holds: small,
// so that a test's roster spans pages linked by Link headers.
const rosterPageSize = 2

// Score is a score the platform took for a line item (AGS 2.0, 3.4).
type Score struct {
	UserID           string   `json:"userId"`
	ScoreGiven       *float64 `json:"scoreGiven"`
	ScoreMaximum     *float64 `json:"scoreMaximum"`
	ActivityProgress string   `json:"activityProgress"`
	GradingProgress  string   `json:"gradingProgress"`
	Timestamp        string   `json:"timestamp"`
}

// Member is a member of the platform's course (NRPS 2.0, 2.3).
type Member struct {
	UserID string   `json:"user_id"`
	Roles  []string `json:"roles"`
	// Status is Active, Inactive or Deleted; Active when empty.
	Status string `json:"status,omitempty"`
	Name   string `json:"name,omitempty"`
	Email  string `json:"email,omitempty"`
}

// services is the platform's side of the Advantage services.
type services struct {
	tokens      map[string]string // access token: its scopes
	jtis        map[string]bool
	grants      int
	scores      map[string][]Score // by line item id
	refuse      []int              // the statuses of the next score posts
	members     []Member
	rosterReads int
}

func (p *Platform) serviceRoutes(mux *http.ServeMux) {
	p.svc = services{tokens: map[string]string{}, jtis: map[string]bool{}, scores: map[string][]Score{}}
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("POST /lineitems/{id}/scores", p.postScore)
	mux.HandleFunc("GET /memberships", p.memberships)
}

// LineItemURL is the URL of line item id, as a launch's AGS claim names
// it.
func (p *Platform) LineItemURL(id string) string { return p.URL + "/lineitems/" + id }

// MembershipsURL is the course's memberships, as a launch's NRPS claim
// names them.
func (p *Platform) MembershipsURL() string { return p.URL + "/memberships" }

// Scores returns the scores line item id took, oldest first.
func (p *Platform) Scores(id string) []Score {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.svc.scores[id])
}

// TokenGrants counts the access tokens the platform granted.
func (p *Platform) TokenGrants() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.svc.grants
}

// RefuseScores makes the next score posts answer statuses, one each, in
// order (a 503 the tool retries, a 400 it gives up on).
func (p *Platform) RefuseScores(statuses ...int) {
	p.mu.Lock()
	p.svc.refuse = append(p.svc.refuse, statuses...)
	p.mu.Unlock()
}

// SetMembers sets the course's roster.
func (p *Platform) SetMembers(members []Member) {
	p.mu.Lock()
	p.svc.members = slices.Clone(members)
	p.mu.Unlock()
}

// RosterReads counts the memberships pages read.
func (p *Platform) RosterReads() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.svc.rosterReads
}

// token is the platform's token endpoint (LTI Security Framework 4.1):
// the client-credentials grant, the tool authenticated by a JWT signed
// with a key it publishes, issued and subject its client id, for this
// endpoint, unexpired and used once (RFC 7523).
func (p *Platform) token(w http.ResponseWriter, r *http.Request) {
	oauthError := func(code, why string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": why})
	}
	switch {
	case r.PostFormValue("grant_type") != "client_credentials":
		oauthError("unsupported_grant_type", "grant_type must be client_credentials")
		return
	case r.PostFormValue("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
		oauthError("invalid_client", "client_assertion_type must be jwt-bearer")
		return
	}
	if err := p.verifyAssertion(r.PostFormValue("client_assertion")); err != nil {
		oauthError("invalid_client", err.Error())
		return
	}
	scopes := strings.Fields(r.PostFormValue("scope"))
	for _, s := range scopes {
		if s != ScopeLineItem && s != ScopeScore && s != ScopeMemberships {
			oauthError("invalid_scope", "unknown scope "+s)
			return
		}
	}
	if len(scopes) == 0 {
		oauthError("invalid_scope", "no scope")
		return
	}
	token := rand.Text()
	p.mu.Lock()
	p.svc.tokens[token] = strings.Join(scopes, " ")
	p.svc.grants++
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer",
		"expires_in": int(TokenLifetime.Seconds()), "scope": strings.Join(scopes, " ")})
}

// verifyAssertion checks the tool's client assertion.
func (p *Platform) verifyAssertion(assertion string) error {
	tok, err := jwt.ParseSigned(assertion, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(tok.Headers) != 1 {
		return errors.New("the client assertion is not an RS256 JWT")
	}
	key, err := p.toolKey(tok.Headers[0].KeyID)
	if err != nil {
		return err
	}
	var c jwt.Claims
	if err := tok.Claims(key, &c); err != nil {
		return fmt.Errorf("the client assertion's signature: %w", err)
	}
	err = c.ValidateWithLeeway(jwt.Expected{Issuer: p.ClientID, Subject: p.ClientID, AnyAudience: jwt.Audience{p.TokenURL()}, Time: p.Now()}, time.Minute)
	switch {
	case err != nil:
		return fmt.Errorf("the client assertion: %w", err)
	case c.Expiry == nil || c.ID == "":
		return errors.New("the client assertion needs exp and jti")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.svc.jtis[c.ID] {
		return errors.New("the client assertion's jti was used before")
	}
	p.svc.jtis[c.ID] = true
	return nil
}

// authorized reports whether r bears a token granted scope, answering 401
// when it does not.
func (p *Platform) authorized(w http.ResponseWriter, r *http.Request, scope string) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	scopes, known := p.svc.tokens[token]
	p.mu.Unlock()
	if !ok || !known || !slices.Contains(strings.Fields(scopes), scope) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "a token with scope "+scope+" is required", http.StatusUnauthorized)
		return false
	}
	return true
}

// postScore takes a score for a line item (AGS 2.0, 3.4): the score media
// type, a user, a timestamp, the two progress values, a score with its
// maximum when fully graded.
func (p *Platform) postScore(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(w, r, ScopeScore) {
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/vnd.ims.lis.v1.score+json" {
		http.Error(w, "the content type must be application/vnd.ims.lis.v1.score+json", http.StatusUnsupportedMediaType)
		return
	}
	p.mu.Lock()
	if len(p.svc.refuse) > 0 {
		status := p.svc.refuse[0]
		p.svc.refuse = p.svc.refuse[1:]
		p.mu.Unlock()
		http.Error(w, "refused by the test", status)
		return
	}
	p.mu.Unlock()
	var s Score
	if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
		http.Error(w, "the score is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	_, err := time.Parse(time.RFC3339Nano, s.Timestamp)
	switch {
	case s.UserID == "" || err != nil:
		http.Error(w, "userId and an ISO 8601 timestamp are required", http.StatusBadRequest)
		return
	case !slices.Contains([]string{"Initialized", "Started", "InProgress", "Submitted", "Completed"}, s.ActivityProgress):
		http.Error(w, "activityProgress "+s.ActivityProgress, http.StatusBadRequest)
		return
	case !slices.Contains([]string{"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"}, s.GradingProgress):
		http.Error(w, "gradingProgress "+s.GradingProgress, http.StatusBadRequest)
		return
	case s.ScoreGiven != nil && (s.ScoreMaximum == nil || *s.ScoreMaximum <= 0 || *s.ScoreGiven < 0):
		http.Error(w, "a scoreGiven needs a positive scoreMaximum", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.svc.scores[r.PathValue("id")] = append(p.svc.scores[r.PathValue("id")], s)
	p.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// memberships answers the course's membership container a page at a
// time, the next page linked by a Link header (NRPS 2.0, 2.4.1).
func (p *Platform) memberships(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(w, r, ScopeMemberships) {
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "application/vnd.ims.lti-nrps.v2.membershipcontainer+json") {
		http.Error(w, "Accept the membership container media type", http.StatusNotAcceptable)
		return
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	p.mu.Lock()
	p.svc.rosterReads++
	members := p.svc.members
	p.mu.Unlock()
	from := min(page*rosterPageSize, len(members))
	to := min(from+rosterPageSize, len(members))
	if to < len(members) {
		w.Header().Add("Link", fmt.Sprintf(`<%s?page=%d>; rel="next"`, p.MembershipsURL(), page+1))
	}
	w.Header().Set("Content-Type", "application/vnd.ims.lti-nrps.v2.membershipcontainer+json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": p.MembershipsURL(), "context": map[string]string{"id": "course"},
		"members": members[from:to]})
}
