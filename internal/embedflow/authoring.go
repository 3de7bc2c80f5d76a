package embedflow

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

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
	QuestionType(ctx context.Context, ref string) (assessment.TypeDef, error)
}

// questionCard is a question's editor: its form (generated from its
// type's config schema) and, after a refused save, what was sent and why.
type questionCard struct {
	ID, Type, Prompt, Points, ConfigJSON string
	Fields                               []configField
	// Structured is false when the type's schema needs the JSON editor.
	Structured bool
	// ErrField and Error are a refused save's field and message; Error
	// shows at the top of the card when no input carries the field.
	ErrField, Error string
	Score           int
	Findings        []quality.Finding
}

// CardError is the refusal not shown beside one of the card's inputs.
func (c questionCard) CardError() string {
	if c.ErrField == "prompt" || c.ErrField == "points" || (c.Structured && strings.HasPrefix(c.ErrField, "config.")) {
		return ""
	}
	return c.Error
}

type authoringView struct {
	view
	ExamName string
	Items    []questionCard
	Types    []string
	// New is the add-question card for the chosen type.
	New questionCard
}

func (s *Service) authoringRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /embed/{id}/questions", s.addQuestion)
	mux.HandleFunc("POST /embed/{id}/questions/{question}", s.editQuestion)
	mux.HandleFunc("POST /embed/{id}/questions/order", s.reorderQuestions)
	mux.HandleFunc("POST /embed/{id}/questions/{question}/move", s.moveQuestion)
	mux.HandleFunc("POST /embed/{id}/questions/{question}/delete", s.deleteQuestion)
}

// authoringPage lists the exam's questions, each with its form and its
// quality findings beside it.
func (s *Service) authoringPage(w http.ResponseWriter, r *http.Request, sess Session, ctx context.Context, errMsg string, refused *questionCard) {
	exam, err := s.resources.Exam(ctx, sess.ExamID)
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	qs, _, err := s.resources.Questions(ctx, sess.ExamID, assessment.AllQuestions)
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	v := authoringView{view: view{Session: sess, TitleKey: "embed.authoring.title", Error: errMsg}, ExamName: exam.Name, Types: assessment.BuiltinKeys()}
	status := http.StatusOK
	if errMsg != "" {
		status = http.StatusBadRequest
	}
	for _, q := range qs {
		var item questionCard
		if refused != nil && refused.ID == q.ID {
			item, status = *refused, http.StatusUnprocessableEntity
		} else {
			item = s.card(ctx, q.ID, q.Type, q.Prompt, strconv.FormatFloat(q.Points, 'f', -1, 64), q.Config, nil)
		}
		if report, err := s.resources.Quality(ctx, sess.ExamID, q.ID); err == nil {
			item.Score, item.Findings = report.Score, report.Findings
		}
		v.Items = append(v.Items, item)
	}
	if refused != nil && refused.ID == "" {
		v.New, status = *refused, http.StatusUnprocessableEntity
	} else {
		typ := r.URL.Query().Get("type")
		if typ == "" {
			typ = assessment.TypeMultipleChoice
		}
		v.New = s.card(ctx, "", typ, "", "1", map[string]any{}, nil)
	}
	web.RenderFramed(w, r, status, "embed-authoring.html", v, sess.AllowedOrigins)
}

// card builds a question's editor; err is a refused save's error.
func (s *Service) card(ctx context.Context, id, typ, prompt, points string, config map[string]any, err error) questionCard {
	raw, _ := json.Marshal(config)
	c := questionCard{ID: id, Type: typ, Prompt: prompt, Points: points, ConfigJSON: string(raw)}
	if err != nil {
		c.Error = pageError(ctx, err)
		if e, ok := errs.As(err); ok {
			c.ErrField = e.Field
		}
	}
	if def, terr := s.resources.QuestionType(ctx, typ); terr == nil {
		c.Fields, c.Structured = configForm(def.ConfigSchema, config, c.ErrField, c.Error)
	}
	return c
}

// submittedConfig reads the configuration a card's form sent: the raw
// JSON when the teacher chose the Advanced editor (or the type has no
// form), the generated form's fields otherwise.
func (s *Service) submittedConfig(ctx context.Context, r *http.Request, typ string) (map[string]any, error) {
	def, err := s.resources.QuestionType(ctx, typ)
	if r.PostFormValue("rawConfig") != "" || err != nil {
		return formConfig(r)
	}
	if _, ok := configForm(def.ConfigSchema, nil, "", ""); !ok {
		return formConfig(r)
	}
	return parseConfigForm(def.ConfigSchema, r.PostForm, "config"), nil
}

// afterEdit shows the page again: redirected after a successful change,
// or with the error of a refused one.
func (s *Service) afterEdit(w http.ResponseWriter, r *http.Request, sess Session, ctx context.Context, err error) {
	if err != nil {
		s.authoringPage(w, r, sess, ctx, pageError(r.Context(), err), nil)
		return
	}
	http.Redirect(w, r, "/embed/"+sess.ID, http.StatusSeeOther)
}

// afterSave is afterEdit for a question's form: a refused save shows the
// card as sent with the API validator's message beside the input it
// concerns (422, which htmx swaps in place).
func (s *Service) afterSave(w http.ResponseWriter, r *http.Request, sess Session, ctx context.Context, refused *questionCard) {
	if refused != nil {
		s.authoringPage(w, r, sess, ctx, "", refused)
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

// save creates (id "") or updates a question from its card's form and
// returns the refused card, or nil.
func (s *Service) save(ctx context.Context, r *http.Request, examID, id string) *questionCard {
	typ := r.PostFormValue("type")
	if id != "" {
		q, err := s.resources.Question(ctx, examID, id)
		if err != nil {
			c := questionCard{ID: id, Error: pageError(r.Context(), err)}
			return &c
		}
		typ = q.Type
	}
	prompt, pointsText := r.PostFormValue("prompt"), r.PostFormValue("points")
	var config map[string]any
	err := formText(r)
	if err == nil {
		config, err = s.submittedConfig(ctx, r, typ)
	}
	if err == nil {
		var points float64
		if points, err = strconv.ParseFloat(pointsText, 64); err != nil {
			err = errs.Invalid("points", "must be a number")
		} else if id == "" {
			_, err = s.resources.CreateQuestion(ctx, examID, assessment.NewQuestion{Type: typ, Prompt: prompt, Config: config, Points: points})
		} else {
			_, err = s.resources.UpdateQuestion(ctx, examID, id, assessment.QuestionPatch{Prompt: &prompt, Points: &points, Config: config})
		}
	}
	if err == nil {
		return nil
	}
	c := s.card(ctx, id, typ, prompt, pointsText, config, err)
	if config == nil || r.PostFormValue("rawConfig") != "" {
		c.ConfigJSON = r.PostFormValue("config")
	}
	return &c
}

func (s *Service) addQuestion(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	s.afterSave(w, r, sess, ctx, s.save(ctx, r, sess.ExamID, ""))
}

func (s *Service) editQuestion(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	s.afterSave(w, r, sess, ctx, s.save(ctx, r, sess.ExamID, r.PathValue("question")))
}

func (s *Service) moveQuestion(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	qs, _, err := s.resources.Questions(ctx, sess.ExamID, assessment.AllQuestions)
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

// reorderQuestions stores the order a drag or an arrow key made on the
// page (which already shows it): 204, or the API's error as JSON-free text.
func (s *Service) reorderQuestions(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "invalid form", http.StatusBadRequest)
		return
	}
	if _, err := s.resources.ReorderQuestions(ctx, sess.ExamID, r.PostForm["order"]); err != nil {
		web.Fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) deleteQuestion(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
	if !ok {
		return
	}
	s.afterEdit(w, r, sess, ctx, s.resources.DeleteQuestion(ctx, sess.ExamID, r.PathValue("question")))
}
