package embedflow

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/regeneration"
	"github.com/assessd/assessd/internal/web"
)

// Regenerator starts, reads and accepts question regenerations (the
// authoring flow's Regenerate button, decision 0091).
type Regenerator interface {
	Create(ctx context.Context, examID, questionID, instructions string) (regeneration.Regeneration, error)
	Get(ctx context.Context, id string) (regeneration.Regeneration, error)
	Accept(ctx context.Context, id string) (regeneration.Regeneration, assessment.Question, error)
}

var _ Regenerator = (*regeneration.Service)(nil)

func (s *Service) regenerationRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /embed/{id}/questions/{question}/regenerate", s.regenerate)
	mux.HandleFunc("GET /embed/{id}/regenerations/{regeneration}", s.regenerationPage)
	mux.HandleFunc("POST /embed/{id}/regenerations/{regeneration}/accept", s.acceptRegeneration)
}

// version is one version of a question as the regeneration page shows it.
type version struct {
	Prompt, ConfigJSON string
	Points             float64
}

type regenerationView struct {
	view
	RegenerationID, Status string
	Current                version
	Proposal               *version
}

// regenerate starts a regeneration of one of the session's exam's
// questions, with the form's instructions.
func (s *Service) regenerate(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	var g regeneration.Regeneration
	err := formText(r)
	if err == nil {
		g, err = s.regenerator.Create(ctx, sess.ExamID, r.PathValue("question"), r.PostFormValue("instructions"))
	}
	if err != nil {
		s.authoringPage(w, r, sess, ctx, pageError(r.Context(), err), nil)
		return
	}
	http.Redirect(w, r, "/embed/"+sess.ID+"/regenerations/"+g.ID, http.StatusSeeOther)
}

// sessionRegeneration loads a regeneration of the session's exam: any
// other is unknown here.
func (s *Service) sessionRegeneration(ctx context.Context, sess Session, id string) (regeneration.Regeneration, error) {
	g, err := s.regenerator.Get(ctx, id)
	if err == nil && g.ExamID != sess.ExamID {
		return regeneration.Regeneration{}, errs.NotFound("question regeneration")
	}
	return g, err
}

// regenerationPage shows the current version beside the proposal, with an
// accept button once the proposal is ready; it refreshes while running.
func (s *Service) regenerationPage(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	g, err := s.sessionRegeneration(ctx, sess, r.PathValue("regeneration"))
	var q assessment.Question
	if err == nil {
		q, err = s.resources.Question(ctx, sess.ExamID, g.QuestionID)
	}
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	v := regenerationView{view: view{Session: sess, TitleKey: "embed.regenerate.title", Error: g.Error, Refresh: g.Status == "running"},
		RegenerationID: g.ID, Status: g.Status, Current: versionOf(q.Prompt, q.Config, q.Points)}
	if p := g.Proposal; p != nil && g.AcceptedRevision == 0 {
		proposal := versionOf(p.Prompt, p.Config, p.Points)
		v.Proposal = &proposal
	}
	web.RenderFramed(w, r, http.StatusOK, "embed-regeneration.html", v, sess.AllowedOrigins)
}

func versionOf(prompt string, config map[string]any, points float64) version {
	c, _ := json.MarshalIndent(config, "", "  ")
	return version{Prompt: prompt, ConfigJSON: string(c), Points: points}
}

// acceptRegeneration makes the proposal the question's next revision and
// returns to the exam.
func (s *Service) acceptRegeneration(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	g, err := s.sessionRegeneration(ctx, sess, r.PathValue("regeneration"))
	if err == nil {
		_, _, err = s.regenerator.Accept(ctx, g.ID)
	}
	s.afterEdit(w, r, sess, ctx, err)
}
