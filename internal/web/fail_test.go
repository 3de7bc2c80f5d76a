package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/platform/errs"
)

// TestFailureAnswersWhatFailed: a domain error keeps its status and
// message; anything else answers without its details, which go to the log
// instead, where an operator finds them.
func TestFailureAnswersWhatFailed(t *testing.T) {
	var log bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))

	refused := errors.New("relation secret_table does not exist")
	for _, c := range []struct {
		name    string
		err     error
		status  int
		message string
		logged  string
	}{
		{"not found", errs.NotFound("exam"), http.StatusNotFound, "exam not found", ""},
		{"invalid", fmt.Errorf("saving: %w", errs.Invalid("prompt", "is empty")), http.StatusBadRequest, "prompt: is empty", ""},
		{"unavailable", errs.Unavailable("DATABASE_UNAVAILABLE", "the database is unavailable").WithCause(refused),
			http.StatusServiceUnavailable, "the database is unavailable", "level=WARN"},
		{"out of time", fmt.Errorf("read exam: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, "This took too long; please try again.", "level=WARN"},
		{"untranslated refusal", fmt.Errorf("save: %w", refusalGone{}), http.StatusConflict, "a row was deleted meanwhile", "level=ERROR"},
		{"unexpected", fmt.Errorf("read exam: %w", refused), http.StatusInternalServerError, "Something went wrong; please try again.", "level=ERROR"},
	} {
		log.Reset()
		status, message := Failure(context.Background(), c.err)
		if status != c.status || message != c.message {
			t.Errorf("%s: %d %q, want %d %q", c.name, status, message, c.status, c.message)
		}
		switch {
		case c.logged == "" && log.Len() > 0:
			t.Errorf("%s: logged %s", c.name, log.String())
		case c.logged != "" && (!strings.Contains(log.String(), c.logged) || !strings.Contains(log.String(), c.err.Error()[len(c.err.Error())-20:])):
			t.Errorf("%s: the log %q does not carry %s and the error", c.name, log.String(), c.logged)
		}
	}
}

// refusalGone is a database refusal its site did not translate, as
// store.ConstraintError is one.
type refusalGone struct{}

func (refusalGone) Error() string { return "violates foreign key constraint exams_folder_fk" }

func (refusalGone) Unhandled() *errs.Error {
	return errs.Conflict("REFERENCE_GONE", "a row was deleted meanwhile")
}
