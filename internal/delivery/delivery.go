// Package delivery gives exams to students and lets them take them: an
// assignment gives one exam to classes and users in a window with a time
// limit and attempt rules, an accommodation adjusts those for one student,
// and an attempt is one student taking the exam (issue 55, decision 0192).
//
// Everything a student saved is a committed row in PostgreSQL before it is
// acknowledged; the server's clock decides the deadline, computed at start
// and kept with the attempt. The deadline is enforced twice: a save after
// deadline + grace is refused here, and the attempt's deadline workflow
// (workflows/attempts, started through the outbox with the attempt) calls
// Close when the time is up, which submits or discards the attempt even if
// no process was running at that moment. Submission goes through the
// results' own path (assessment.SubmitResult) in the transaction that
// marks the attempt submitted, so it happens exactly once. The package
// knows nothing of the workflow engine.
package delivery

import (
	"time"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks/event"
	"github.com/assessd/assessd/tenancy"
)

// The permissions of delivery. Staff manage assignments; students read
// the assignments given to them and take them with their own credential.
var (
	ReadAssignments  = tenancy.Permission{Scope: tenancy.ScopeAssignmentsRead}
	WriteAssignments = tenancy.Permission{Scope: tenancy.ScopeAssignmentsWrite, Roles: tenancy.StaffRoles}
	ReadAttempts     = tenancy.Permission{Scope: tenancy.ScopeAttemptsRead}
	WriteAttempts    = tenancy.Permission{Scope: tenancy.ScopeAttemptsWrite}
	// ReadAccommodations and ReadStudentsAttempts are staff reads of what
	// concerns other students.
	ReadAccommodations   = tenancy.Permission{Scope: tenancy.ScopeAssignmentsRead, Roles: tenancy.StaffRoles}
	ReadStudentsAttempts = tenancy.Permission{Scope: tenancy.ScopeAttemptsRead, Roles: tenancy.StaffRoles}
)

// Overdue policies: what happens to an attempt still open at deadline +
// grace.
const (
	OverdueAutosubmit = "autosubmit"
	OverdueDiscard    = "discard"
)

// When students see the result of a submitted attempt.
const (
	ShowNever       = "never"
	ShowAfterSubmit = "after_submit"
	ShowAfterClose  = "after_close"
)

// Attempt statuses.
const (
	StatusInProgress = "in_progress"
	StatusSubmitted  = "submitted"
	StatusDiscarded  = "discarded"
)

// Who submitted an attempt.
const (
	ByStudent = "student"
	ByStaff   = "staff"
	BySystem  = "system"
)

// Defaults and bounds of an assignment.
const (
	DefaultGraceSeconds = 30
	MaxGraceSeconds     = 3600
	MaxAttempts         = 100
	MaxTimeLimitMinutes = 7 * 24 * 60
	// MaxAssignees bounds the classes plus users one assignment names.
	MaxAssignees = 500
)

// Assignment gives one exam to classes and users in a window.
type Assignment struct {
	ID       string
	ExamID   string
	ClassIDs []string
	UserIDs  []string
	OpensAt  time.Time
	ClosesAt time.Time
	// TimeLimitMinutes is 0 when the attempt runs until the close.
	TimeLimitMinutes int
	MaxAttempts      int
	ShuffleQuestions bool
	ShuffleOptions   bool
	GraceSeconds     int
	Overdue          string
	ShowResults      string
	// Progress is read for staff only.
	Progress  *Progress
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Progress counts an assignment's students by their latest attempt.
type Progress struct {
	Assigned, NotStarted, InProgress, Submitted, Discarded int
}

// Accommodation is one student's overrides of an assignment.
type Accommodation struct {
	AssignmentID     string
	UserID           string
	ExtraTimePercent int
	ExtraMinutes     int
	// ClosesAt is zero when the assignment's close applies.
	ClosesAt time.Time
	// MaxAttempts is 0 when the assignment's applies.
	MaxAttempts int
	UpdatedAt   time.Time
}

// Attempt is one student taking an assigned exam.
type Attempt struct {
	ID           string
	AssignmentID string
	ExamID       string
	UserID       string
	Number       int
	Status       string
	StartedAt    time.Time
	Deadline     time.Time
	GraceSeconds int
	Overdue      string
	Region       string
	SubmittedAt  time.Time
	SubmittedBy  string
	ResultID     string
	// ExamName, Questions (in the attempt's order) and Responses are read
	// by Attempt, not by lists.
	ExamName  string
	Questions []assessment.SheetQuestion
	Responses []Response
	// Seed, QuestionIDs and ShuffleOptions fix the attempt's order.
	Seed           int64
	QuestionIDs    []string
	ShuffleOptions bool
	// ServerTime is the database's clock when the attempt was read.
	ServerTime time.Time
}

// Closes is when saves stop being taken: the deadline plus grace.
func (a Attempt) Closes() time.Time {
	return a.Deadline.Add(time.Duration(a.GraceSeconds) * time.Second)
}

// Response is the saved answer to one question of an attempt.
type Response struct {
	QuestionID string
	Value      any
	Files      []string
	SavedAt    time.Time
	Revision   int
}

// Service manages assignments and attempts.
type Service struct {
	db      *store.DB
	content *assessment.Service
	// Events records attempt.started and attempt.submitted; nil records
	// none.
	Events *event.Recorder
	// Metrics counts attempts and saves; nil counts nothing.
	Metrics *Metrics
}

// NewService returns a Service submitting attempts through content.
func NewService(db *store.DB, content *assessment.Service) *Service {
	return &Service{db: db, content: content}
}
