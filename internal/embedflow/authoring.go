package embedflow

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/assessment/quality"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/web"
)

// Authoring is what the authoring flow reads and writes, as the teacher.
type Authoring interface {
	Exam(ctx context.Context, id string) (assessment.Exam, error)
	Questions(ctx context.Context, examID string, p paging.Page) ([]assessment.Question, string, error)
	Question(ctx context.Context, examID, id string) (assessment.Question, error)
	Quality(ctx context.Context, examID, id string) (assessment.QualityReport, error)
	CreateQuestion(ctx context.Context, examID string, in assessment.NewQuestion) (assessment.Question, error)
	UpdateQuestion(ctx context.Context, examID, id string, p assessment.QuestionPatch) (assessment.Question, error)
	DeleteQuestion(ctx context.Context, examID, id string) error
	ReorderQuestions(ctx context.Context, examID string, order []string) ([]assessment.Question, error)
}

type authoringItem struct {
	ID, Prompt, ConfigJSON string
	Points                 float64
	Score                  int
	Findings               []quality.Finding
}

type authoringView struct {
	view
	ExamName string
	Items    []authoringItem
	Types    []string
}

func (s *Service) authoringRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /embed/{id}/questions", s.addQuestion)
	mux.HandleFunc("POST /embed/{id}/questions/{question}", s.editQuestion)
	mux.HandleFunc("POST /embed/{id}/questions/{question}/move", s.moveQuestion)
	mux.HandleFunc("POST /embed/{id}/questions/{question}/delete", s.deleteQuestion)
}

// authoringPage lists the exam's questions, each with its form and its
// quality findings beside it.
func (s *Service) authoringPage(w http.ResponseWriter, r *http.Request, sess Session, ctx context.Context, errMsg string) {
	exam, err := s.resources.Exam(ctx, sess.ExamID)
	if err != nil {
		http.Error(w, pageError(err), http.StatusNotFound)
		return
	}
	qs, _, err := s.resources.Questions(ctx, sess.ExamID, paging.Page{Size: paging.MaxSize})
	if err != nil {
		http.Error(w, pageError(err), http.StatusNotFound)
		return
	}
	v := authoringView{view: view{Session: sess, TitleKey: "embed.authoring.title", Error: errMsg}, ExamName: exam.Name, Types: assessment.BuiltinKeys()}
	for _, q := range qs {
		config, _ := json.Marshal(q.Config)
		item := authoringItem{ID: q.ID, Prompt: q.Prompt, ConfigJSON: string(config), Points: q.Points}
		if report, err := s.resources.Quality(ctx, sess.ExamID, q.ID); err == nil {
			item.Score, item.Findings = report.Score, report.Findings
		}
		v.Items = append(v.Items, item)
	}
	status := http.StatusOK
	if errMsg != "" {
		status = http.StatusBadRequest
	}
	web.RenderFramed(w, r, status, "embed-authoring.html", v, sess.AllowedOrigins)
}

// afterEdit shows the page again: with the error of a refused change, or
// redirected after a successful one.
func (s *Service) afterEdit(w http.ResponseWriter, r *http.Request, sess Session, ctx context.Context, err error) {
	if err != nil {
		s.authoringPage(w, r, sess, ctx, pageError(err))
		return
	}
	http.Redirect(w, r, "/embed/"+sess.ID, http.StatusSeeOther)
}

func formConfig(r *http.Request) (map[string]any, error) {
	config := map[string]any{}
	if raw := r.PostFormValue("config"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &config); err != nil {
			return nil, errs.Invalid("config", "must be a JSON object")
		}
	}
	return config, nil
}

func (s *Service) addQuestion(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	config, err := formConfig(r)
	if err == nil {
		points, _ := strconv.ParseFloat(r.PostFormValue("points"), 64)
		_, err = s.resources.CreateQuestion(ctx, sess.ExamID, assessment.NewQuestion{
			Type: r.PostFormValue("type"), Prompt: r.PostFormValue("prompt"), Config: config, Points: points})
	}
	s.afterEdit(w, r, sess, ctx, err)
}

func (s *Service) editQuestion(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	config, err := formConfig(r)
	if err == nil {
		prompt := r.PostFormValue("prompt")
		points, _ := strconv.ParseFloat(r.PostFormValue("points"), 64)
		_, err = s.resources.UpdateQuestion(ctx, sess.ExamID, r.PathValue("question"), assessment.QuestionPatch{Prompt: &prompt, Points: &points, Config: config})
	}
	s.afterEdit(w, r, sess, ctx, err)
}

func (s *Service) moveQuestion(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	qs, _, err := s.resources.Questions(ctx, sess.ExamID, paging.Page{Size: paging.MaxSize})
	if err == nil {
		order := make([]string, len(qs))
		for i, q := range qs {
			order[i] = q.ID
		}
		i := slices.Index(order, r.PathValue("question"))
		j := i - 1
		if r.PostFormValue("to") == "down" {
			j = i + 1
		}
		if i >= 0 && j >= 0 && j < len(order) {
			order[i], order[j] = order[j], order[i]
			_, err = s.resources.ReorderQuestions(ctx, sess.ExamID, order)
		}
	}
	s.afterEdit(w, r, sess, ctx, err)
}

func (s *Service) deleteQuestion(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	s.afterEdit(w, r, sess, ctx, s.resources.DeleteQuestion(ctx, sess.ExamID, r.PathValue("question")))
}
