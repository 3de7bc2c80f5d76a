package embedflow

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/web"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
)

// generatableTypes are the question types the generate-exam form offers.
var generatableTypes = []string{"multiple_choice", "true_false", "short_text", "numeric", "essay"}

// view is what every flow page renders from.
type view struct {
	Session
	TitleKey string
	Error    string
	// Refresh reloads the page every 2 seconds while work runs.
	Refresh bool
	// Poll marks a page that updates itself with htmx; without JavaScript
	// it reloads instead.
	Poll bool
}

// OriginList is the session's allowed origins, the targets of the
// page's postMessage events.
func (v view) OriginList() string { return strings.Join(v.AllowedOrigins, " ") }

// T looks a UI string up for the session's theme.
func (v view) T(key string) string { return v.Strings.T(key) }

// Hide reports whether the session's presets hide a generate-exam field.
func (v view) Hide(field string) bool {
	name := map[string]string{"subject": "hideSubject", "studentLevel": "hideStudentLevel",
		"durationMinutes": "hideDuration", "taxonomy": "hideTaxonomy", "questionTypes": "hideQuestionTypes"}[field]
	return v.Presets[name] == true
}

// Preset returns a preset value as form text.
func (v view) Preset(field string) string {
	switch x := v.Presets[field].(type) {
	case string:
		return x
	case float64:
		return fmt.Sprint(x)
	}
	return ""
}

// PresetList returns a list preset.
func (v view) PresetList(field string) []string {
	var out []string
	list, _ := v.Presets[field].([]any)
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

type questionTypeOption struct {
	Key, NameKey string
	Checked      bool
}

// QuestionTypes lists the generate-exam form's type checkboxes.
func (v view) QuestionTypes() []questionTypeOption {
	preset := v.PresetList("questionTypes")
	out := make([]questionTypeOption, len(generatableTypes))
	for i, t := range generatableTypes {
		checked := len(preset) == 0
		for _, p := range preset {
			checked = checked || p == t
		}
		out[i] = questionTypeOption{Key: t, NameKey: "embed.questionTypes." + t, Checked: checked}
	}
	return out
}

// Routes registers the embed pages on mux.
func (s *Service) Routes(mux *http.ServeMux) {
	assets := web.EmbedAssets()
	for _, name := range web.EmbedAssetNames {
		mux.Handle("GET /embed/assets/"+name, assets)
	}
	mux.HandleFunc("GET /embed/{id}", s.page)
	mux.HandleFunc("POST /embed/{id}/generate", s.generate)
	mux.HandleFunc("GET /embed/{id}/generations/{generation}", s.generationPage)
	mux.HandleFunc("POST /embed/{id}/submit", s.submit)
	s.authoringRoutes(mux)
	s.regenerationRoutes(mux)
}

type examView struct {
	view
	ExamName  string
	Questions []assessment.SheetQuestion
	Submitted bool
}

// studentExam shows the exam to answer, or that it was submitted.
func (s *Service) studentExam(w http.ResponseWriter, r *http.Request, sess Session, errMsg string) {
	caller, err := s.Caller(r.Context(), sess)
	if err != nil {
		web.RenderFramed(w, r, http.StatusNotFound, "embed-expired.html", view{Session: sess, TitleKey: "embed.expired.title"}, sess.AllowedOrigins)
		return
	}
	exam, questions, err := s.resources.AnswerSheet(tenancy.WithCaller(r.Context(), caller), sess.ExamID)
	if err != nil {
		http.Error(w, pageError(err), http.StatusNotFound)
		return
	}
	status := http.StatusOK
	if errMsg != "" {
		status = http.StatusBadRequest
	}
	web.RenderFramed(w, r, status, "embed-student-exam.html", examView{view: view{Session: sess, TitleKey: "embed.student.title", Error: errMsg},
		ExamName: exam.Name, Questions: questions, Submitted: sess.ResultID != ""}, sess.AllowedOrigins)
}

// submit records the student's answers once; the session remembers the
// result, so a second submission is refused.
func (s *Service) submit(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowStudentExam)
	if !ok {
		return
	}
	if sess.ResultID != "" {
		http.Redirect(w, r, "/embed/"+sess.ID, http.StatusSeeOther)
		return
	}
	_, questions, err := s.resources.AnswerSheet(ctx, sess.ExamID)
	if err != nil {
		http.Error(w, pageError(err), http.StatusNotFound)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "invalid form", http.StatusBadRequest)
		return
	}
	var answers []assessment.NewAnswer
	for _, q := range questions {
		if a, ok := formAnswer(q, r.PostForm); ok {
			answers = append(answers, a)
		}
	}
	result, err := s.resources.SubmitResult(ctx, sess.ExamID, assessment.NewResult{UserID: sess.ActorID, Answers: answers})
	if err != nil {
		s.studentExam(w, r, sess, pageError(err))
		return
	}
	sess.ResultID = result.ID
	if err := s.store.Save(ctx, sess); err != nil {
		http.Error(w, pageError(err), http.StatusServiceUnavailable)
		return
	}
	http.Redirect(w, r, "/embed/"+sess.ID, http.StatusSeeOther)
}

// formAnswer reads one question's answer from the form, typed for its
// question type; false when it was left empty.
func formAnswer(q assessment.SheetQuestion, form url.Values) (assessment.NewAnswer, bool) {
	a := assessment.NewAnswer{QuestionID: q.ID}
	switch q.Type {
	case assessment.TypeMultipleSelect:
		var ids []any
		for _, v := range form[q.ID] {
			ids = append(ids, v)
		}
		a.Value = ids
		return a, len(ids) > 0
	case assessment.TypeFileUpload:
		a.Files = strings.Fields(form.Get(q.ID + ".files"))
		return a, len(a.Files) > 0
	}
	v := strings.TrimSpace(form.Get(q.ID))
	if v == "" {
		return a, false
	}
	switch q.Type {
	case assessment.TypeTrueFalse:
		a.Value = v == "true"
	case assessment.TypeNumeric:
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return a, false
		}
		a.Value = n
	default:
		a.Value = v
	}
	return a, true
}

type resultView struct {
	view
	Result assessment.Result
	Rows   []resultRow
}

// resultRow is one question of a result as the student sees it.
type resultRow struct {
	Prompt, Answer, Feedback string
	Score, MaxScore          float64
	Graded                   bool
}

// Percent is the result's score as a whole percentage.
func (v resultView) Percent() int {
	if v.Result.MaxScore == 0 {
		return 0
	}
	return int(math.Round(100 * v.Result.Score / v.Result.MaxScore))
}

// answerText is how an answer reads: the chosen options' texts rather
// than their ids; "" when unanswered.
func answerText(q assessment.SheetQuestion, a assessment.Answer) string {
	if len(a.Files) > 0 {
		return strings.Join(a.Files, ", ")
	}
	values, ok := a.Value.([]any)
	if !ok {
		if a.Value == nil {
			return ""
		}
		values = []any{a.Value}
	}
	var out []string
	for _, v := range values {
		text := fmt.Sprint(v)
		for _, o := range q.Options {
			if o.ID == text {
				text = o.Text
			}
		}
		out = append(out, text)
	}
	return strings.Join(out, ", ")
}

// studentResult shows a result with per-question feedback; while grading
// runs, the page polls itself (htmx) until the result is graded.
func (s *Service) studentResult(w http.ResponseWriter, r *http.Request, sess Session) {
	caller, err := s.Caller(r.Context(), sess)
	if err != nil {
		web.RenderFramed(w, r, http.StatusNotFound, "embed-expired.html", view{Session: sess, TitleKey: "embed.expired.title"}, sess.AllowedOrigins)
		return
	}
	ctx := tenancy.WithCaller(r.Context(), caller)
	result, err := s.resources.Result(ctx, "", sess.ResultID)
	if err != nil {
		http.Error(w, pageError(err), http.StatusNotFound)
		return
	}
	_, questions, err := s.resources.AnswerSheet(ctx, result.ExamID)
	if err != nil {
		http.Error(w, pageError(err), http.StatusNotFound)
		return
	}
	byID := map[string]assessment.SheetQuestion{}
	for _, q := range questions {
		byID[q.ID] = q
	}
	rows := make([]resultRow, len(result.Answers))
	for i, a := range result.Answers {
		q := byID[a.QuestionID]
		rows[i] = resultRow{Prompt: q.Prompt, Answer: answerText(q, a), Feedback: a.Feedback, Score: a.Score, MaxScore: a.MaxScore,
			Graded: a.Status != assessment.AnswerPending}
	}
	grading := result.Status == assessment.StatusGrading
	web.RenderFramed(w, r, http.StatusOK, "embed-student-result.html",
		resultView{view: view{Session: sess, TitleKey: "embed.results.title", Poll: grading}, Result: result, Rows: rows}, sess.AllowedOrigins)
}

// asActor opens the session of a flow and returns a context acting as its
// actor with the flow's scopes, or answers the page itself.
func (s *Service) asActor(w http.ResponseWriter, r *http.Request, flow Flow) (Session, context.Context, bool) {
	sess, ok := s.open(w, r)
	if !ok {
		return Session{}, nil, false
	}
	if sess.Flow != flow {
		http.Error(w, "this session does not grant that flow", http.StatusForbidden)
		return Session{}, nil, false
	}
	caller, err := s.Caller(r.Context(), sess)
	if err != nil {
		web.RenderFramed(w, r, http.StatusNotFound, "embed-expired.html", view{Session: sess, TitleKey: "embed.expired.title"}, sess.AllowedOrigins)
		return Session{}, nil, false
	}
	return sess, tenancy.WithCaller(r.Context(), caller), true
}

// generate starts an exam generation from the form; hidden fields always
// take their preset, whatever the form sends.
func (s *Service) generate(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowGenerateExam)
	if !ok {
		return
	}
	v := view{Session: sess, TitleKey: "embed.generate.title"}
	field := func(name string) string {
		if v.Hide(name) {
			return v.Preset(name)
		}
		return r.PostFormValue(name)
	}
	duration, _ := strconv.Atoi(field("durationMinutes"))
	types := r.PostForm["questionTypes"]
	if v.Hide("questionTypes") {
		types = v.PresetList("questionTypes")
	}
	g, err := s.generator.Create(ctx, generation.Params{Subject: field("subject"), StudentLevel: field("studentLevel"),
		DurationMinutes: duration, Taxonomy: field("taxonomy"), QuestionTypes: types})
	if err != nil {
		v.Error = pageError(err)
		web.RenderFramed(w, r, http.StatusBadRequest, "embed-generate.html", v, sess.AllowedOrigins)
		return
	}
	http.Redirect(w, r, "/embed/"+sess.ID+"/generations/"+g.ID, http.StatusSeeOther)
}

type generationView struct {
	view
	Status, ExamID string
}

// generationPage shows a generation's progress until the exam is ready.
func (s *Service) generationPage(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowGenerateExam)
	if !ok {
		return
	}
	g, err := s.generator.Get(ctx, r.PathValue("generation"))
	if err != nil {
		http.Error(w, pageError(err), http.StatusNotFound)
		return
	}
	web.RenderFramed(w, r, http.StatusOK, "embed-generation.html",
		generationView{view: view{Session: sess, TitleKey: "embed.generate.title", Error: g.Error, Refresh: g.Status == "running"}, Status: g.Status, ExamID: g.ExamID}, sess.AllowedOrigins)
}

// pageError is the message of a domain error a page can show.
func pageError(err error) string {
	if e, ok := errs.As(err); ok {
		return e.Message
	}
	return "Something went wrong; please try again."
}

// open loads a page's session, or answers the friendly expired page (404)
// or an unavailable page (503).
func (s *Service) open(w http.ResponseWriter, r *http.Request) (Session, bool) {
	sess, err := s.Open(r.Context(), r.PathValue("id"))
	switch {
	case err == nil:
		observability.Info(r.Context()).OrgID = sess.OrgID
		return sess, true
	case IsNotFound(err):
		web.RenderFramed(w, r, http.StatusNotFound, "embed-expired.html", view{TitleKey: "embed.expired.title"}, nil)
	case errs.Is(err, errs.KindUnavailable):
		http.Error(w, "Embedded flows are temporarily unavailable. Please retry in a moment.", http.StatusServiceUnavailable)
	default:
		slog.ErrorContext(r.Context(), "open embed session", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
	return Session{}, false
}

func (s *Service) page(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.open(w, r)
	if !ok {
		return
	}
	switch sess.Flow {
	case FlowGenerateExam:
		web.RenderFramed(w, r, http.StatusOK, "embed-generate.html", view{Session: sess, TitleKey: "embed.generate.title"}, sess.AllowedOrigins)
	case FlowStudentExam:
		s.studentExam(w, r, sess, "")
	case FlowStudentResults:
		s.studentResult(w, r, sess)
	case FlowAuthoring:
		if _, ctx, ok := s.asActor(w, r, FlowAuthoring); ok {
			s.authoringPage(w, r, sess, ctx, "", nil)
		}
	}
}
