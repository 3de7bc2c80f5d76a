package embedflow

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/tenancy"
)

// Resources checks the exam or result a session names, within the caller's
// organization; unknown and foreign ids are errs.KindNotFound.
type Resources interface {
	ExamExists(ctx context.Context, examID string) error
	// ResultStudent returns the student who submitted a result.
	ResultStudent(ctx context.Context, resultID string) (string, error)
}

// Content is what the flows read and write, as the actor.
type Content interface {
	Resources
	Authoring
	AnswerSheet(ctx context.Context, examID string) (assessment.Exam, []assessment.SheetQuestion, error)
	SubmitResult(ctx context.Context, examID string, in assessment.NewResult) (assessment.Result, error)
	// AwaitResult reads a result, waiting up to wait for its grading to
	// finish (decision 0135).
	AwaitResult(ctx context.Context, examID, id string, wait time.Duration) (assessment.Result, error)
}

// Actors resolves the role of a user of the caller's organization and
// records the caller's actions in the organization's audit log.
type Actors interface {
	UserRole(ctx context.Context, userID string) (tenancy.Role, error)
	RecordAction(ctx context.Context, action string, target audit.Target, after map[string]any) error
}

// NewSession is the input of Create.
type NewSession struct {
	Flow           string
	ActorID        string
	ExamID         string
	ResultID       string
	Strings        map[string]string
	Look           Look
	Presets        map[string]any
	ExpiresIn      int32
	AllowedOrigins []string
	// AssignmentID (student-exam only) makes the page the actor's attempt
	// of an assignment given to them.
	AssignmentID string
}

// Generator starts and reads exam generations (the generate-exam flow).
type Generator interface {
	Create(ctx context.Context, p generation.Params) (generation.Generation, error)
	Get(ctx context.Context, id string) (generation.Generation, error)
}

// Service creates and opens embed sessions.
type Service struct {
	store     *Store
	actors    Actors
	resources Content
	generator Generator
	// regenerator serves the authoring flow's Regenerate button.
	regenerator Regenerator
	// Files stores the student-exam flow's uploaded answer files; set it
	// before serving an exam with file questions.
	Files Uploads
	// Attempts takes assigned exams; set it before creating a session
	// with an assignment.
	Attempts Attempts
	baseURL  string
	now      func() time.Time
	orgLabel func(string) string
	created  *prometheus.CounterVec
	opened   *prometheus.CounterVec
}

// NewService returns a Service whose session URLs start with baseURL.
// orgLabel bounds the org label of the metrics.
func NewService(store *Store, actors Actors, resources Content, generator Generator, regenerator Regenerator, baseURL string, reg prometheus.Registerer, orgLabel func(string) string) *Service {
	s := &Service{store: store, actors: actors, resources: resources, generator: generator, regenerator: regenerator, baseURL: baseURL, now: time.Now, orgLabel: orgLabel,
		created: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_embed_sessions_created_total", Help: "Embed sessions created by organization and flow.",
		}, []string{"org", "flow"}),
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_embed_sessions_opened_total", Help: "Embed session pages opened by organization and flow.",
		}, []string{"org", "flow"}),
	}
	reg.MustRegister(s.created, s.opened)
	return s
}

// CreatePermission is what creating a session takes: embed:write from
// staff.
var CreatePermission = tenancy.Permission{Scope: tenancy.ScopeEmbedWrite,
	Roles: tenancy.StaffRoles}

// Create validates and stores a session for the caller's organization.
func (s *Service) Create(ctx context.Context, in NewSession) (Session, error) {
	caller, err := tenancy.Authorize(ctx, CreatePermission)
	if err != nil {
		return Session{}, err
	}
	flow, err := flowOf(in.Flow)
	if err != nil {
		return Session{}, err
	}
	lifetime, err := ttl(in.ExpiresIn)
	if err != nil {
		return Session{}, err
	}
	if err := validatePresets(flow, in.Presets); err != nil {
		return Session{}, err
	}
	if err := validateTheme(in.Strings); err != nil {
		return Session{}, err
	}
	look, err := validateLook(in.Look)
	if err != nil {
		return Session{}, err
	}
	origins, err := validateOrigins(in.AllowedOrigins)
	if err != nil {
		return Session{}, err
	}
	if in.ActorID == "" {
		return Session{}, errs.Invalid("actor", "is required: the user id the flow acts as")
	}
	role, err := s.actors.UserRole(ctx, in.ActorID)
	if errs.Is(err, errs.KindInvalid) {
		return Session{}, errs.Invalid("actor", "must be a user id (usr_...)")
	}
	if err != nil {
		return Session{}, err
	}
	if flow.Student() != (role == tenancy.RoleStudent) {
		if flow.Student() {
			return Session{}, errs.Invalid("actor", "the %s flow is taken by a student; this user is a %s", flow, role)
		}
		return Session{}, errs.Invalid("actor", "the %s flow is for teachers; a student cannot author", flow)
	}
	examID, err := s.checkResources(ctx, flow, in)
	if err != nil {
		return Session{}, err
	}
	sess := Session{
		ID: newID(), OrgID: caller.OrgID, ActorID: in.ActorID, Flow: flow, ExamID: examID, ResultID: in.ResultID,
		Strings: in.Strings, Look: look, Presets: in.Presets, AllowedOrigins: origins, GrantedBy: caller.UserID, ExpiresAt: s.now().Add(lifetime).UTC().Truncate(time.Second),
		AssignmentID: in.AssignmentID,
	}
	if err := s.store.Save(ctx, sess); err != nil {
		return Session{}, err
	}
	// The session id is a bearer secret (it opens the page), so the entry
	// targets the user the session acts as and never names the id.
	if err := s.actors.RecordAction(ctx, "embed_session.created", audit.Target{Type: "user", ID: sess.ActorID},
		map[string]any{"flow": string(flow), "examId": sess.ExamID, "resultId": sess.ResultID, "assignmentId": sess.AssignmentID,
			"expiresAt": sess.ExpiresAt.Format(time.RFC3339)}); err != nil {
		return Session{}, err
	}
	s.created.WithLabelValues(s.orgLabel(sess.OrgID), string(flow)).Inc()
	return sess, nil
}

// checkResources checks what the session names and returns the exam it
// shows.
func (s *Service) checkResources(ctx context.Context, flow Flow, in NewSession) (examID string, err error) {
	if in.AssignmentID != "" {
		if flow != FlowStudentExam {
			return "", errs.Invalid("assignmentId", "is taken by the %s flow only", FlowStudentExam)
		}
		return s.checkAssignment(ctx, in)
	}
	switch flow {
	case FlowAuthoring, FlowStudentExam:
		if in.ExamID == "" {
			return "", errs.Invalid("examId", "is required by the %s flow", flow)
		}
		return in.ExamID, s.resources.ExamExists(ctx, in.ExamID)
	case FlowStudentResults:
		if in.ResultID == "" {
			return "", errs.Invalid("resultId", "is required by the %s flow", flow)
		}
		student, err := s.resources.ResultStudent(ctx, in.ResultID)
		if err != nil {
			return "", err
		}
		if student != in.ActorID {
			return "", errs.Invalid("resultId", "belongs to another student than the actor")
		}
	}
	return in.ExamID, nil
}

// checkAssignment checks that the assignment of a student-exam session is
// given to its actor, and that examId, which may be left out, names the
// assignment's exam (decision 0194); it returns that exam.
func (s *Service) checkAssignment(ctx context.Context, in NewSession) (string, error) {
	examID, given, err := s.Attempts.AssignedExam(ctx, in.AssignmentID, in.ActorID)
	switch {
	case err != nil:
		return "", err
	case !given:
		return "", errs.Invalid("assignmentId", "is not given to the actor")
	case in.ExamID != "" && in.ExamID != examID:
		return "", errs.Invalid("examId", "is not the exam of the assignment; leave it out or name %s", examID)
	}
	return examID, nil
}

// URL is where a session's page is served.
func (s *Service) URL(sess Session) string { return s.baseURL + "/embed/" + sess.ID }

// Open returns a live session for its page and counts the opening.
func (s *Service) Open(ctx context.Context, id string) (Session, error) {
	if !validID(id) {
		return Session{}, ErrNotFound
	}
	sess, err := s.store.Get(ctx, id)
	if err != nil {
		return Session{}, err
	}
	if !sess.ExpiresAt.After(s.now()) {
		return Session{}, ErrNotFound
	}
	s.opened.WithLabelValues(s.orgLabel(sess.OrgID), string(sess.Flow)).Inc()
	return sess, nil
}

// Caller is the identity every action inside a session runs as: the actor,
// in the session's organization, with the scopes the flow needs and no more.
func (s *Service) Caller(ctx context.Context, sess Session) (*tenancy.Caller, error) {
	c := &tenancy.Caller{Kind: tenancy.KindEmbed, OrgID: sess.OrgID, UserID: sess.ActorID, CredentialID: sess.ID}
	role, err := s.actors.UserRole(tenancy.WithCaller(ctx, c), sess.ActorID)
	if err != nil {
		return nil, err
	}
	c.Role = role
	c.Scopes = flowScopes[sess.Flow]
	if sess.AssignmentID != "" {
		c.Scopes = attemptScopes
	}
	return c, nil
}

// flowScopes grants each flow exactly what it does.
var flowScopes = map[Flow][]tenancy.Scope{
	FlowAuthoring:      {tenancy.ScopeExamsRead, tenancy.ScopeExamsWrite, tenancy.ScopeQuestionTypesRead},
	FlowGenerateExam:   {tenancy.ScopeExamsRead, tenancy.ScopeExamsWrite, tenancy.ScopeQuestionTypesRead},
	FlowStudentExam:    {tenancy.ScopeExamsRead, tenancy.ScopeResultsWrite},
	FlowStudentResults: {tenancy.ScopeExamsRead, tenancy.ScopeResultsRead},
}

// attemptScopes are those of a student-exam session with an assignment:
// its attempt is started, read, saved and submitted, the assignment read
// for when it opens, and answer files uploaded (media.UploadPermission).
var attemptScopes = []tenancy.Scope{tenancy.ScopeAssignmentsRead, tenancy.ScopeAttemptsRead, tenancy.ScopeAttemptsWrite,
	tenancy.ScopeResultsWrite}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newID returns "emb_" and 160 random bits.
func newID() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return "emb_" + strings.ToLower(idEncoding.EncodeToString(b))
}

func validID(id string) bool {
	rest, ok := strings.CutPrefix(id, "emb_")
	if !ok || len(rest) != 32 {
		return false
	}
	_, err := idEncoding.DecodeString(strings.ToUpper(rest))
	return err == nil
}

// IsNotFound reports an unknown or expired session.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
