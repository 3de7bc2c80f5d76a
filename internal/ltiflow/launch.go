package ltiflow

import (
	"context"
	"net/http"

	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/lti"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/web"
	"github.com/assessd/assessd/tenancy"
)

// sessionTTL is the lifetime of a launch's embed session: the longest, so
// that no exam outlives its page; the attempt's deadline is the server's
// whatever the page's lifetime.
var sessionTTL = int32(embedflow.MaxTTL.Seconds())

// launch takes a platform's launch: verified and matched by lti, it opens
// the page its message and role ask for.
func (h *Handler) launch(w http.ResponseWriter, r *http.Request) {
	l, err := h.tool.Launch(r.Context(), r.PostFormValue("id_token"), r.PostFormValue("state"))
	if err != nil {
		refusedPage(w, r, "Launch refused", err)
		return
	}
	if l.MessageType == lti.MessageDeepLinking {
		h.deepLinking(w, r, l)
		return
	}
	ctx := tenancy.WithCaller(r.Context(), launchCaller(l))
	if l.Role == tenancy.RoleStudent {
		h.learner(w, r, ctx, l)
		return
	}
	h.instructor(w, r, ctx, l)
}

// learner opens a learner's attempt of the linked assignment: a
// student-exam session of the assignment, the page it redirects to.
func (h *Handler) learner(w http.ResponseWriter, r *http.Request, ctx context.Context, l lti.Launch) {
	if l.AssignmentID == "" {
		web.RenderFramed(w, r, http.StatusOK, "lti-assignment.html", assignmentView{Title: "Nothing to take yet",
			Notice: "This link opens no assignment yet: your instructor chooses its exam."}, l.FrameOrigins)
		return
	}
	sess, err := h.embeds.Create(ctx, embedflow.NewSession{Flow: string(embedflow.FlowStudentExam), ActorID: l.UserID,
		AssignmentID: l.AssignmentID, AllowedOrigins: l.FrameOrigins, ExpiresIn: sessionTTL})
	if err != nil {
		logLaunch(ctx, l, err)
		refusedPage(w, r, "The exam cannot be opened", assignmentProblem(err))
		return
	}
	http.Redirect(w, r, h.embeds.URL(sess), http.StatusSeeOther)
}

// assignmentProblem says, in a learner's or an instructor's words, why the
// linked assignment could not be opened.
func assignmentProblem(err error) error {
	e, ok := errs.As(err)
	switch {
	case !ok:
		return err
	case e.Kind == errs.KindNotFound:
		return errs.FailedPrecondition("ASSIGNMENT_GONE", "This link's assignment no longer exists.")
	case e.Kind == errs.KindInvalid && e.Field == "assignmentId":
		return errs.Forbidden("ASSIGNMENT_NOT_GIVEN", "This link's assignment is not given to you or to this course's class.")
	}
	return err
}

// assignmentView is the page of a link: for an instructor, the
// assignment's progress and its exam to edit; a notice when there is
// nothing to show.
type assignmentView struct {
	Title        string
	Assignment   *delivery.Assignment
	AuthoringURL string
	Notice       string
}

// instructor shows an instructor the linked assignment's progress and a
// link to its exam's authoring page, an authoring session of theirs.
func (h *Handler) instructor(w http.ResponseWriter, r *http.Request, ctx context.Context, l lti.Launch) {
	if l.AssignmentID == "" {
		web.RenderFramed(w, r, http.StatusOK, "lti-assignment.html", assignmentView{Title: "No assignment yet",
			Notice: "This link opens no assignment yet. Add assessd to the course as content (deep linking) to choose an exam and its settings."},
			l.FrameOrigins)
		return
	}
	a, err := h.assignments.Assignment(ctx, l.AssignmentID)
	if err != nil {
		logLaunch(ctx, l, err)
		refusedPage(w, r, "The assignment cannot be opened", assignmentProblem(err))
		return
	}
	sess, err := h.embeds.Create(ctx, embedflow.NewSession{Flow: string(embedflow.FlowAuthoring), ActorID: l.UserID, ExamID: a.ExamID,
		AllowedOrigins: l.FrameOrigins, ExpiresIn: sessionTTL})
	if err != nil {
		logLaunch(ctx, l, err)
		refusedPage(w, r, "The exam cannot be opened", err)
		return
	}
	web.RenderFramed(w, r, http.StatusOK, "lti-assignment.html", assignmentView{Title: "Assignment", Assignment: &a,
		AuthoringURL: h.embeds.URL(sess)}, l.FrameOrigins)
}
