package ltiflow

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/lti"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/web"
	"github.com/assessd/assessd/tenancy"
)

// Exams lists the exams an instructor may link and reads one's questions
// for its maximum score (assessment.Service).
type Exams interface {
	Exams(ctx context.Context, f assessment.ExamFilter, p paging.Page) ([]assessment.Exam, string, error)
	AnswerSheet(ctx context.Context, examID string) (assessment.Exam, []assessment.SheetQuestion, error)
}

var _ Exams = (*assessment.Service)(nil)

// instructorCaller is the instructor of a deep-linking request on the
// tool's own pages: a teacher, who lists exams and assigns the course's
// class as their own credential would let them (decision 0203).
func instructorCaller(req lti.DeepLinkingRequest) *tenancy.Caller {
	return &tenancy.Caller{Kind: tenancy.KindSession, OrgID: req.OrgID, UserID: req.UserID, Role: tenancy.RoleTeacher,
		Scopes: []tenancy.Scope{tenancy.ScopeExamsRead, tenancy.ScopeAssignmentsRead, tenancy.ScopeAssignmentsWrite, tenancy.ScopeClassesRead}}
}

// deepLinkingForm is the form's values, as typed.
type deepLinkingForm struct {
	ExamID, Title, OpensAt, ClosesAt, TimeLimitMinutes, MaxAttempts string
}

// localTime is the layout of a datetime-local input, read as UTC.
const localTime = "2006-01-02T15:04"

type deepLinkingView struct {
	ID    string
	Exams []assessment.Exam
	// Query is the part of a name the exams were searched by; More says
	// the organization has exams beyond those listed.
	Query string
	More  bool
	Form  deepLinkingForm
	Error string
}

// deepLinking answers a verified deep-linking request: the request kept,
// the instructor's choice of exam and settings.
func (h *Handler) deepLinking(w http.ResponseWriter, r *http.Request, l lti.Launch) {
	if l.ClassID == "" {
		refusedPage(w, r, "Nothing to link to", errs.FailedPrecondition("CONTEXT_REQUIRED", "A link is added to a course: this request names none."))
		return
	}
	id, err := h.tool.SaveDeepLinking(r.Context(), l)
	if err != nil {
		refusedPage(w, r, "The choice cannot be offered", err)
		return
	}
	req := lti.DeepLinkingRequest{OrgID: l.OrgID, UserID: l.UserID, FrameOrigins: l.FrameOrigins}
	h.deepLinkingPage(w, r, http.StatusOK, id, req, defaultSettings(), "")
}

// defaultSettings are the form's values before the instructor's choice:
// open from now for a week, one attempt.
func defaultSettings() deepLinkingForm {
	now := time.Now().UTC().Truncate(time.Minute)
	return deepLinkingForm{OpensAt: now.Format(localTime), ClosesAt: now.Add(7 * 24 * time.Hour).Format(localTime), MaxAttempts: "1"}
}

// searchExams shows the form of a kept request with the exams whose name
// holds the query q: an organization may have more exams than one list
// shows.
func (h *Handler) searchExams(w http.ResponseWriter, r *http.Request) {
	if id, req, ok := h.keptRequest(w, r); ok {
		h.deepLinkingPage(w, r, http.StatusOK, id, req, defaultSettings(), "")
	}
}

// keptRequest is the kept deep-linking request the path names, or false
// once the page refusing it is written.
func (h *Handler) keptRequest(w http.ResponseWriter, r *http.Request) (string, lti.DeepLinkingRequest, bool) {
	id := r.PathValue("id")
	req, err := h.tool.DeepLinking(r.Context(), id)
	if err != nil {
		refusedPage(w, r, "The choice cannot be made", err)
		return "", req, false
	}
	return id, req, true
}

// deepLinkingPage shows the form of request id with the values of f and
// the problem msg, if any, listing the exams the request's q names.
func (h *Handler) deepLinkingPage(w http.ResponseWriter, r *http.Request, status int, id string, req lti.DeepLinkingRequest, f deepLinkingForm, msg string) {
	ctx := tenancy.WithCaller(r.Context(), instructorCaller(req))
	query := strings.TrimSpace(r.FormValue("q"))
	exams, next, err := h.exams.Exams(ctx, assessment.ExamFilter{Query: query}, paging.Page{Size: paging.MaxSize})
	if err != nil {
		refusedPage(w, r, "The exams cannot be listed", err)
		return
	}
	web.RenderFramed(w, r, status, "lti-deep-linking.html", deepLinkingView{ID: id, Exams: exams, Query: query, More: next != "",
		Form: f, Error: msg}, req.FrameOrigins)
}

// chooseLink takes the instructor's choice: the assignment of the course's
// class, and the signed LtiDeepLinkingResponse for it, posted back to the
// platform by the page.
func (h *Handler) chooseLink(w http.ResponseWriter, r *http.Request) {
	id, req, ok := h.keptRequest(w, r)
	if !ok {
		return
	}
	f := deepLinkingForm{ExamID: r.PostFormValue("examId"), Title: strings.TrimSpace(r.PostFormValue("title")),
		OpensAt: r.PostFormValue("opensAt"), ClosesAt: r.PostFormValue("closesAt"),
		TimeLimitMinutes: r.PostFormValue("timeLimitMinutes"), MaxAttempts: r.PostFormValue("maxAttempts")}
	problem := func(err error) {
		status, msg := web.Failure(r.Context(), err)
		h.deepLinkingPage(w, r, status, id, req, f, msg)
	}
	in, err := f.assignment(req.ClassID)
	if err != nil {
		problem(err)
		return
	}
	ctx := tenancy.WithCaller(r.Context(), instructorCaller(req))
	exam, sheet, err := h.exams.AnswerSheet(ctx, in.ExamID)
	if err != nil {
		problem(err)
		return
	}
	release, err := h.tool.ClaimDeepLinking(ctx, id)
	if err != nil {
		refusedPage(w, r, "The choice cannot be made", err)
		return
	}
	a, err := h.assignments.CreateAssignment(ctx, in)
	if err != nil {
		release()
		problem(err)
		return
	}
	item := lti.ResourceLinkItem{Title: f.Title, Text: exam.Description, AssignmentID: a.ID, OpensAt: a.OpensAt, ClosesAt: a.ClosesAt}
	if item.Title == "" {
		item.Title = exam.Name
	}
	for _, q := range sheet {
		item.ScoreMaximum += q.Points
	}
	token, err := h.tool.DeepLinkingResponse(ctx, req, item)
	if err != nil {
		release()
		refusedPage(w, r, "The link cannot be made", err)
		return
	}
	if err := h.tool.FinishDeepLinking(ctx, id); err != nil {
		refusedPage(w, r, "The link cannot be made", err)
		return
	}
	web.RenderFramedPostingTo(w, r, http.StatusOK, "lti-deep-linking-return.html",
		map[string]string{"ReturnURL": req.Settings.ReturnURL, "JWT": token, "Title": item.Title}, req.FrameOrigins, req.Settings.ReturnURL)
}

// assignment reads the form as the assignment of class classID.
func (f deepLinkingForm) assignment(classID string) (delivery.NewAssignment, error) {
	in := delivery.NewAssignment{ExamID: f.ExamID, ClassIDs: []string{classID}}
	if f.ExamID == "" {
		return in, errs.Invalid("examId", "choose an exam")
	}
	var err error
	if in.OpensAt, err = time.Parse(localTime, f.OpensAt); err != nil {
		return in, errs.Invalid("opensAt", "must be a date and time such as 2026-09-01T08:00")
	}
	if in.ClosesAt, err = time.Parse(localTime, f.ClosesAt); err != nil {
		return in, errs.Invalid("closesAt", "must be a date and time such as 2026-09-08T18:00")
	}
	if f.TimeLimitMinutes != "" {
		n, err := strconv.Atoi(f.TimeLimitMinutes)
		if err != nil {
			return in, errs.Invalid("timeLimitMinutes", "must be a whole number of minutes")
		}
		in.TimeLimitMinutes = &n
	}
	n, err := strconv.Atoi(f.MaxAttempts)
	if err != nil {
		return in, errs.Invalid("maxAttempts", "must be a whole number")
	}
	in.MaxAttempts = &n
	return in, nil
}
