// Package assessment owns the content of an organization's assessments:
// folders, exams, questions, question type definitions, submitted results
// and the statistics computed from them. Every operation authorizes its
// caller with tenancy.Authorize and runs tenant-scoped SQL (store.DB), so
// ids of other organizations are simply not found.
package assessment

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/assessment/expr"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/wakeup"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks/event"
	"github.com/assessd/assessd/tenancy"
)

// Service implements the assessment API on PostgreSQL.
type Service struct {
	db *store.DB
	// rules holds the compiled JSONata expressions of question types.
	rules *expr.Cache
	// Events records the webhook events of results, and is the recorder
	// of the services built on this one (generation, regeneration,
	// scanning); nil records none.
	Events *event.Recorder
	// OnGraded adds to the batch of the transaction in which a result's
	// grading finishes (graded or failed: at submission, by the grading
	// workflow, after a correction) what other features do then, such as
	// posting the score to an LTI line item; nil adds nothing.
	OnGraded func(b *pgx.Batch, resultID string)
	// papers holds recently read exam papers for SubmitResult.
	papers *papers
	// finished wakes the reads waiting for a result's grading.
	finished *wakeup.Hub
}

// ruleCacheSize bounds the compiled rules kept: the built-in types' and
// those of the custom types in active use.
const ruleCacheSize = 1024

// NewService returns a Service using db.
func NewService(db *store.DB) *Service {
	return &Service{db: db, rules: expr.NewCache(ruleCacheSize), papers: newPapers(), finished: wakeup.New()}
}

var (
	anyRole = []tenancy.Role(nil)
	staff   = tenancy.StaffRoles
)

// The permissions of this package (decision 0020). Students may read exams
// and folders and their own results; question content (which carries the
// answer key) and statistics are for staff.
var (
	ReadExams          = tenancy.Permission{Scope: tenancy.ScopeExamsRead, Roles: anyRole}
	WriteExams         = tenancy.Permission{Scope: tenancy.ScopeExamsWrite, Roles: staff}
	ReadQuestions      = tenancy.Permission{Scope: tenancy.ScopeExamsRead, Roles: staff}
	ReadResults        = tenancy.Permission{Scope: tenancy.ScopeResultsRead, Roles: anyRole}
	WriteResults       = tenancy.Permission{Scope: tenancy.ScopeResultsWrite, Roles: anyRole}
	ReadSummaries      = tenancy.Permission{Scope: tenancy.ScopeResultsRead, Roles: staff}
	ReadQuestionTypes  = tenancy.Permission{Scope: tenancy.ScopeQuestionTypesRead, Roles: staff}
	WriteQuestionTypes = tenancy.Permission{Scope: tenancy.ScopeQuestionTypesWrite, Roles: staff}
)

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// checkID validates an id's form; a malformed id is a 400 naming field.
func checkID(field string, p ids.Prefix, id, what string) error {
	if !ids.Valid(p, id) {
		return errs.Invalid(field, "must be %s id (%s...)", what, p)
	}
	return nil
}

// text trims s and checks it is present (when required) and at most max
// characters long.
func text(field, s string, required bool, max int) (string, error) {
	s = strings.TrimSpace(s)
	if required && s == "" {
		return "", errs.Invalid(field, "is required")
	}
	if utf8.RuneCountInString(s) > max {
		return "", errs.Invalid(field, "must be at most %d characters", max)
	}
	return s, nil
}
