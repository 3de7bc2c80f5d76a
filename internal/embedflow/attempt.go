package embedflow

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/web"
)

// Attempts takes assigned exams (delivery.Service): a student-exam session
// with an assignment is its actor's attempt, and everything the page saves
// is the attempt's, in PostgreSQL, never only in Redis (decision 0194).
type Attempts interface {
	// AssignedExam checks no permission: it serves the staff member
	// creating a session.
	AssignedExam(ctx context.Context, assignmentID, student string) (examID string, given bool, err error)
	Assignment(ctx context.Context, id string) (delivery.Assignment, error)
	StartAttempt(ctx context.Context, assignmentID, student string) (delivery.Attempt, error)
	Attempt(ctx context.Context, id string) (delivery.Attempt, error)
	SaveResponse(ctx context.Context, attemptID, questionID string, in delivery.NewResponse) (delivery.Response, error)
	SubmitAttempt(ctx context.Context, id string) (delivery.Attempt, error)
}

// refusal is a change the page refuses, shown with the message of its
// catalogue key.
type refusal struct{ key string }

func (r refusal) Error() string { return "embed: change refused: " + r.key }

// attemptOf is the session's attempt: the one it holds, else the actor's
// attempt in progress or a new one, which the session then holds, so that
// the page shows a submitted attempt as submitted instead of starting
// another.
func (s *Service) attemptOf(ctx context.Context, sess *Session) (delivery.Attempt, error) {
	if sess.AttemptID != "" {
		return s.Attempts.Attempt(ctx, sess.AttemptID)
	}
	a, err := s.Attempts.StartAttempt(ctx, sess.AssignmentID, "")
	if err != nil {
		return delivery.Attempt{}, err
	}
	sess.AttemptID = a.ID
	return a, s.store.Save(ctx, *sess)
}

// attemptExam shows the session's attempt, started or resumed: its
// questions in its order (options too) with the saved responses filled in
// and the time left by the server's clock, or that it was submitted; or a
// page that says why it cannot be taken.
func (s *Service) attemptExam(w http.ResponseWriter, r *http.Request, sess Session, ctx context.Context, errMsg string) {
	a, err := s.attemptOf(ctx, &sess)
	if err != nil {
		s.attemptUnavailable(w, r, sess, ctx, err)
		return
	}
	if a.Status == delivery.StatusDiscarded {
		unavailablePage(w, r, sess, http.StatusConflict, "ATTEMPT_CLOSED", sess.Strings.T("embed.attempt.discarded"))
		return
	}
	v := examView{view: view{Session: sess, TitleKey: "embed.student.title", Error: errMsg}, ExamName: a.ExamName,
		Questions: a.Questions, Submitted: a.Status == delivery.StatusSubmitted, Answers: answersOf(a),
		Deadline: a.Deadline, Now: a.ServerTime, KeepAtDeadline: a.Overdue == delivery.OverdueDiscard}
	v.ResultID = a.ResultID // announced to the host with "submitted"
	if s.Files != nil {
		v.maxBytes = s.Files.MaxBytes()
	}
	renderExam(w, r, v)
}

// unavailableKeys are the catalogue keys of the refusals a student may
// meet opening an attempt.
var unavailableKeys = map[string]string{
	"ASSIGNMENT_NOT_OPEN": "embed.attempt.notOpen",
	"ASSIGNMENT_CLOSED":   "embed.attempt.assignmentClosed",
	"ATTEMPTS_EXHAUSTED":  "embed.attempt.exhausted",
}

// attemptUnavailable answers a page whose attempt could not be started or
// read: why, in the session's words, for the refusals of unavailableKeys
// (with when the assignment opens), what failed otherwise.
func (s *Service) attemptUnavailable(w http.ResponseWriter, r *http.Request, sess Session, ctx context.Context, err error) {
	e, _ := errs.As(err)
	if e == nil || unavailableKeys[e.Reason] == "" {
		web.Fail(w, r, err)
		return
	}
	msg := sess.Strings.T(unavailableKeys[e.Reason])
	if e.Reason == "ASSIGNMENT_NOT_OPEN" {
		if asg, err := s.Attempts.Assignment(ctx, sess.AssignmentID); err == nil {
			msg += " " + asg.OpensAt.UTC().Format("2006-01-02 15:04 UTC") + "."
		}
	}
	unavailablePage(w, r, sess, e.Kind.HTTPStatus(), e.Reason, msg)
}

type unavailableView struct {
	view
	// Reason is the error's reason, posted to the host with the message.
	Reason string
}

func unavailablePage(w http.ResponseWriter, r *http.Request, sess Session, status int, reason, msg string) {
	web.RenderFramed(w, r, status, "embed-attempt-unavailable.html",
		unavailableView{view: view{Session: sess, TitleKey: "embed.attempt.unavailable", Error: msg}, Reason: reason}, sess.AllowedOrigins)
}

// attemptSheet is attempt a as the page changes it: keep saves each answer
// that differs from a's saved response as the new response (SaveResponse,
// committed before it returns, so the page says saved only once
// PostgreSQL has it). A save the attempt no longer takes is a refusal
// saying why, an answer too long for a response errTooLong.
func (s *Service) attemptSheet(a delivery.Attempt) openSheet {
	saved := answersOf(a)
	keep := func(ctx context.Context, answers url.Values) error {
		for _, q := range a.Questions {
			next, ok := formAnswer(q, answers)
			if prev, had := formAnswer(q, saved); had == ok && (!ok || sameAnswer(prev, next)) {
				continue
			}
			if !ok {
				next = assessment.NewAnswer{} // emptied
			}
			if _, err := s.Attempts.SaveResponse(ctx, a.ID, q.ID, delivery.NewResponse{Value: next.Value, Files: next.Files}); err != nil {
				return refusalOf(a, err)
			}
		}
		return nil
	}
	return openSheet{questions: a.Questions, answers: answersOf(a), keep: keep}
}

func sameAnswer(x, y assessment.NewAnswer) bool {
	return reflect.DeepEqual(x.Value, y.Value) && slices.Equal(x.Files, y.Files)
}

// refusalOf is how the page answers a save of attempt a that failed with
// err: ATTEMPT_CLOSED says that it was submitted, discarded, or that its
// time is up; a value too long is errTooLong, as a draft's.
func refusalOf(a delivery.Attempt, err error) error {
	e, ok := errs.As(err)
	switch {
	case !ok:
		return err
	case e.Reason == "ATTEMPT_CLOSED" && a.Status == delivery.StatusSubmitted:
		return refusal{"embed.attempt.submitted"}
	case e.Reason == "ATTEMPT_CLOSED" && a.Status == delivery.StatusDiscarded:
		return refusal{"embed.attempt.discarded"}
	case e.Reason == "ATTEMPT_CLOSED":
		return refusal{"embed.attempt.closed"}
	case e.Kind == errs.KindInvalid && e.Field == "value":
		return errTooLong
	}
	return err
}

// answersOf is an attempt's saved responses as the exam form's values,
// which formAnswer reads back: choices by option id, true and false,
// numbers as written, other values as JSON text, a file answer's files
// under "<question id>.files".
func answersOf(a delivery.Attempt) url.Values {
	out := url.Values{}
	for _, r := range a.Responses {
		if len(r.Files) > 0 {
			out[r.QuestionID+".files"] = slices.Clone(r.Files) // the page changes its own list
		}
		switch v := r.Value.(type) {
		case nil:
		case []any:
			for _, item := range v {
				out.Add(r.QuestionID, formValue(item))
			}
		default:
			out.Set(r.QuestionID, formValue(v))
		}
	}
	return out
}

func formValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// submitAttempt saves the posted form's changed answers, then submits the
// attempt (SubmitAttempt: once, however many clicks and tabs; one past its
// time is closed as its deadline closes it) and shows the page, which says
// what became of it.
func (s *Service) submitAttempt(w http.ResponseWriter, r *http.Request, sess Session, ctx context.Context) {
	a, err := s.attemptOf(ctx, &sess)
	if err != nil {
		s.attemptUnavailable(w, r, sess, ctx, err)
		return
	}
	if formText(r) != nil {
		s.refuseAnswers(w, r, sess, "embed.student.unsavable")
		return
	}
	sheet := s.attemptSheet(a)
	draft := Draft{Answers: sheet.answers}
	err = mergeAnswers(&draft, sheet.questions, r.PostForm)
	if err == nil {
		err = sheet.keep(ctx, draft.Answers)
	}
	var refused refusal
	switch {
	case errors.Is(err, errTooLong):
		s.refuseAnswers(w, r, sess, "embed.student.tooLong")
		return
	case err != nil && !errors.As(err, &refused): // a closed attempt is the submission's to tell
		web.Fail(w, r, err)
		return
	}
	if _, err := s.Attempts.SubmitAttempt(ctx, a.ID); err != nil && !isReason(err, "ATTEMPT_CLOSED") {
		s.studentExam(w, r, sess, pageError(r.Context(), err))
		return
	}
	http.Redirect(w, r, "/embed/"+sess.ID, http.StatusSeeOther)
}

func isReason(err error, reason string) bool {
	e, ok := errs.As(err)
	return ok && e.Reason == reason
}
