package embedflow

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/textcheck"
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

// TypeName is a question type's name: the catalogue's for a built-in
// type, the key otherwise.
func (v view) TypeName(key string) string {
	if _, ok := Catalogue["embed.questionTypes."+key]; ok {
		return v.T("embed.questionTypes." + key)
	}
	return key
}

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
	mux.HandleFunc("POST /embed/{id}/generations/{generation}/edit", s.editGenerated)
	mux.HandleFunc("POST /embed/{id}/submit", s.submit)
	mux.HandleFunc("POST /embed/{id}/answers", s.saveAnswers)
	s.fileRoutes(mux)
	s.authoringRoutes(mux)
	s.regenerationRoutes(mux)
}

type examView struct {
	view
	ExamName  string
	Questions []assessment.SheetQuestion
	Submitted bool
	// Answers are the saved draft's values, filled into the form.
	Answers url.Values
	// Page is the 1-based question shown when the layout is "paged";
	// 0 shows every question.
	Page int
	// Deadline is when a timed exam's time is up (zero: untimed), Now the
	// server's time when the page was made: the countdown runs from their
	// difference, never from the page's clock.
	Deadline, Now time.Time
	// KeepAtDeadline leaves the answers unsubmitted when the time is up:
	// an attempt whose assignment discards what is not submitted by then
	// is the server's to close, not the page's to submit.
	KeepAtDeadline bool
	// maxBytes is the size limit of an uploaded file.
	maxBytes int64
}

// Value is a saved answer of a field.
func (v examView) Value(field string) string { return v.Answers.Get(field) }

// Chosen reports whether option value of a question was saved.
func (v examView) Chosen(questionID, value string) bool {
	return slices.Contains(v.Answers[questionID], value)
}

// Answered counts the questions with a saved answer.
func (v examView) Answered() int {
	n := 0
	for _, q := range v.Questions {
		if _, ok := formAnswer(q, v.Answers); ok {
			n++
		}
	}
	return n
}

// Shown lists the questions on the current screen.
func (v examView) Shown() []assessment.SheetQuestion {
	if v.Page == 0 {
		return v.Questions
	}
	return v.Questions[v.Page-1 : v.Page]
}

// Last reports the paged layout's last screen (or the one-page layout).
func (v examView) Last() bool { return v.Page == 0 || v.Page == len(v.Questions) }

// DeadlineText is the deadline as RFC 3339, shown without JavaScript.
func (v examView) DeadlineText() string { return v.Deadline.UTC().Format(time.RFC3339) }

// SecondsLeft is the time left, by the server's clock, for the page's
// countdown.
func (v examView) SecondsLeft() int64 {
	return max(0, int64(math.Ceil(v.Deadline.Sub(v.Now).Seconds())))
}

// studentExam shows the exam to answer with the saved answers filled in,
// or that it was submitted: the attempt's with an assignment, else the
// session's draft.
func (s *Service) studentExam(w http.ResponseWriter, r *http.Request, sess Session, errMsg string) {
	caller, ok := s.actorCaller(w, r, sess)
	if !ok {
		return
	}
	if sess.AssignmentID != "" {
		s.attemptExam(w, r, sess, tenancy.WithCaller(r.Context(), caller), errMsg)
		return
	}
	exam, questions, err := s.resources.AnswerSheet(tenancy.WithCaller(r.Context(), caller), sess.ExamID)
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	draft, err := s.store.Draft(r.Context(), sess)
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	v := examView{view: view{Session: sess, TitleKey: "embed.student.title", Error: errMsg},
		ExamName: exam.Name, Questions: questions, Submitted: sess.ResultID != "", Answers: draft.Answers}
	if s.Files != nil {
		v.maxBytes = s.Files.MaxBytes()
	}
	if exam.DurationMinutes > 0 && !v.Submitted {
		v.Now = s.now().UTC()
		if draft.StartedAt.IsZero() {
			draft.StartedAt = v.Now
			if err := s.store.SaveDraft(r.Context(), sess, draft); err != nil {
				web.Fail(w, r, err)
				return
			}
		}
		v.Deadline = draft.StartedAt.Add(time.Duration(exam.DurationMinutes) * time.Minute)
	}
	renderExam(w, r, v)
}

// renderExam writes the exam page of v: the screen asked for in the paged
// layout, answered 400 when it shows an error.
func renderExam(w http.ResponseWriter, r *http.Request, v examView) {
	if v.Presets["layout"] == "paged" && len(v.Questions) > 0 {
		v.Page, _ = strconv.Atoi(r.URL.Query().Get("q"))
		v.Page = min(max(v.Page, 1), len(v.Questions))
	}
	status := http.StatusOK
	if v.Error != "" {
		status = http.StatusBadRequest
	}
	web.RenderFramed(w, r, status, "embed-student-exam.html", v, v.AllowedOrigins)
}

// mergeAnswers puts a posted form's answers into the draft: the
// questions the form showed (its "shown" values) take the form's values,
// an emptied one is cleared, and the others keep theirs. A file answer's
// list changes only by uploads and removals (files.go), never by the form.
// An answer past maxAnswerBytes is errTooLong.
func mergeAnswers(d *Draft, questions []assessment.SheetQuestion, form url.Values) error {
	if d.Answers == nil {
		d.Answers = url.Values{}
	}
	for _, q := range questions {
		if !slices.Contains(form["shown"], q.ID) || q.Type == assessment.TypeFileUpload {
			continue
		}
		vals := form[q.ID]
		switch text := strings.Join(vals, ""); {
		case len(text) > maxAnswerBytes:
			return errTooLong
		case text != "":
			d.Answers[q.ID] = vals
		default:
			delete(d.Answers, q.ID)
		}
	}
	return nil
}

// openSheet is what a student changes while answering: the questions, the
// saved answers as the exam form's values, and keep, which stores the
// answers after a change. A session's draft (Redis) keeps them for an
// exam alone; an attempt keeps each changed answer as its response in
// PostgreSQL (decision 0194).
type openSheet struct {
	questions []assessment.SheetQuestion
	answers   url.Values
	keep      func(ctx context.Context, answers url.Values) error
}

// unsubmittedSheet opens a student-exam session whose answers are not
// submitted yet, acting as the student, with its exam's questions and
// saved answers; it answers the request itself when it returns false.
func (s *Service) unsubmittedSheet(w http.ResponseWriter, r *http.Request) (Session, context.Context, openSheet, bool) {
	sess, ctx, ok := s.asActor(w, r, FlowStudentExam)
	if !ok {
		return Session{}, nil, openSheet{}, false
	}
	if sess.AssignmentID != "" {
		a, err := s.attemptOf(ctx, &sess)
		if err != nil {
			web.Fail(w, r, err)
			return Session{}, nil, openSheet{}, false
		}
		return sess, ctx, s.attemptSheet(a), true
	}
	if sess.ResultID != "" {
		http.Error(w, "these answers were already submitted", http.StatusConflict)
		return Session{}, nil, openSheet{}, false
	}
	_, questions, err := s.resources.AnswerSheet(ctx, sess.ExamID)
	if err != nil {
		web.Fail(w, r, err)
		return Session{}, nil, openSheet{}, false
	}
	draft, err := s.store.Draft(ctx, sess)
	if err != nil {
		web.Fail(w, r, err)
		return Session{}, nil, openSheet{}, false
	}
	keep := func(ctx context.Context, answers url.Values) error {
		draft.Answers = answers
		return s.store.SaveDraft(ctx, sess, draft)
	}
	return sess, ctx, openSheet{questions: questions, answers: draft.Answers, keep: keep}, true
}

// saveAnswers autosaves the exam form: into the session's draft, or each
// changed answer into the attempt. htmx posts it on every change and shows
// the answer; without JavaScript the paged layout's Next and Previous
// buttons post it and go to screen "go".
func (s *Service) saveAnswers(w http.ResponseWriter, r *http.Request) {
	sess, ctx, sheet, ok := s.unsubmittedSheet(w, r)
	if !ok {
		return
	}
	if formText(r) != nil {
		s.refuseAnswers(w, r, sess, "embed.student.unsavable")
		return
	}
	draft := Draft{Answers: sheet.answers}
	err := mergeAnswers(&draft, sheet.questions, r.PostForm)
	if err == nil {
		err = sheet.keep(ctx, draft.Answers)
	}
	var refused refusal
	switch {
	case errors.Is(err, errTooLong):
		s.refuseAnswers(w, r, sess, "embed.student.tooLong")
		return
	case errors.As(err, &refused):
		s.refuseAnswers(w, r, sess, refused.key)
		return
	case err != nil:
		web.Fail(w, r, err)
		return
	}
	if r.Header.Get("HX-Request") == "true" {
		// The status text, and the progress updated out of band.
		v := examView{Questions: sheet.questions, Answers: draft.Answers}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, `%s<strong id="answered" hx-swap-oob="true">%d / %d</strong><progress id="progress" hx-swap-oob="true" max="%d" value="%d" aria-labelledby="answered"></progress>`, //nolint:gosec // G705: escaped text and numbers
			html.EscapeString(sess.Strings.T("embed.student.saved")), v.Answered(), len(v.Questions), len(v.Questions), v.Answered())
		return
	}
	to := "/embed/" + sess.ID
	if page, err := strconv.Atoi(r.URL.Query().Get("go")); err == nil {
		to += "?q=" + strconv.Itoa(page)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// refuseAnswers answers a student's form refused before anything of it is
// saved (holding text PostgreSQL cannot store, too long, or its attempt
// closed) with the message of key: in the autosave status (422, which
// htmx swaps in) or above the exam.
func (s *Service) refuseAnswers(w http.ResponseWriter, r *http.Request, sess Session, key string) {
	msg := sess.Strings.T(key)
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, html.EscapeString(msg))
		return
	}
	s.studentExam(w, r, sess, msg)
}

// submit records the student's answers (the draft and the posted form)
// exactly once: a Redis claim lets only the first submission through. An
// attempt is submitted by submitAttempt instead.
func (s *Service) submit(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowStudentExam)
	if !ok {
		return
	}
	if sess.AssignmentID != "" {
		s.submitAttempt(w, r, sess, ctx)
		return
	}
	if sess.ResultID != "" {
		http.Redirect(w, r, "/embed/"+sess.ID, http.StatusSeeOther)
		return
	}
	_, questions, err := s.resources.AnswerSheet(ctx, sess.ExamID)
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	if formText(r) != nil {
		s.refuseAnswers(w, r, sess, "embed.student.unsavable")
		return
	}
	draft, err := s.store.Draft(ctx, sess)
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	if mergeAnswers(&draft, questions, r.PostForm) != nil {
		s.refuseAnswers(w, r, sess, "embed.student.tooLong")
		return
	}
	claimed, release, err := s.store.ClaimSubmit(ctx, sess)
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	if !claimed {
		// Another request is submitting or submitted: show its outcome.
		http.Redirect(w, r, "/embed/"+sess.ID, http.StatusSeeOther)
		return
	}
	var answers []assessment.NewAnswer
	for _, q := range questions {
		if a, ok := formAnswer(q, draft.Answers); ok {
			answers = append(answers, a)
		}
	}
	result, err := s.resources.SubmitResult(ctx, sess.ExamID, assessment.NewResult{UserID: sess.ActorID, Answers: answers})
	if err != nil {
		release()
		_ = s.store.SaveDraft(ctx, sess, draft)
		s.studentExam(w, r, sess, pageError(r.Context(), err))
		return
	}
	sess.ResultID = result.ID
	if err := s.store.Save(ctx, sess); err != nil {
		web.Fail(w, r, err)
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
		a.Files = form[q.ID+".files"]
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
	// Files are a file answer's files, linked by name.
	Files []fileLink
	// Correct is the correct answer, shown only when the session's
	// showCorrectAnswers preset allows and the answer is graded.
	Correct         string
	Score, MaxScore float64
	Graded          bool
}

// Percent is the result's score as a whole percentage.
func (v resultView) Percent() int {
	if v.Result.MaxScore == 0 {
		return 0
	}
	return int(math.Round(100 * v.Result.Score / v.Result.MaxScore))
}

// boolText is a true/false answer in the session's words.
func boolText(b bool, words Strings) string {
	if b {
		return words.T("embed.answer.true")
	}
	return words.T("embed.answer.false")
}

// fileLink is an answer file as the results page links it.
type fileLink struct{ Name, URL string }

// fileLinks names each file by the last segment of its URL's path
// (uploads are served as /media/{id}/{name}).
func fileLinks(urls []string) []fileLink {
	links := make([]fileLink, len(urls))
	for i, u := range urls {
		links[i] = fileLink{Name: u, URL: u}
		if parsed, err := url.Parse(u); err == nil {
			if name := path.Base(parsed.Path); name != "/" && name != "." {
				links[i].Name = name
			}
		}
	}
	return links
}

// answerText is how an answer reads: the chosen options' texts rather
// than their ids, true and false in the session's words; "" when
// unanswered or answered with files.
func answerText(q assessment.SheetQuestion, a assessment.Answer, words Strings) string {
	if b, ok := a.Value.(bool); ok {
		return boolText(b, words)
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

// correctAnswers reads, when the session's showCorrectAnswers preset
// allows, each question's correct answer as text. A student may not read
// an exam's configuration, so it is read as the staff member who granted
// the session, with exams:read only; nil when not allowed or unreadable.
func (s *Service) correctAnswers(ctx context.Context, sess Session, examID string) map[string]string {
	if sess.Presets["showCorrectAnswers"] != true || sess.GrantedBy == "" {
		return nil
	}
	grantor := &tenancy.Caller{Kind: tenancy.KindEmbed, OrgID: sess.OrgID, UserID: sess.GrantedBy, CredentialID: sess.ID, Scopes: []tenancy.Scope{tenancy.ScopeExamsRead}}
	role, err := s.actors.UserRole(tenancy.WithCaller(ctx, grantor), sess.GrantedBy)
	if err != nil {
		return nil
	}
	grantor.Role = role
	qs, _, err := s.resources.Questions(tenancy.WithCaller(ctx, grantor), examID, assessment.AllQuestions)
	if err != nil {
		slog.WarnContext(ctx, "embed results: read correct answers", "err", err)
		return nil
	}
	out := map[string]string{}
	for _, q := range qs {
		out[q.ID] = correctText(q, sess.Strings)
	}
	return out
}

// correctText is a built-in question's correct answer as the student
// reads it; "" for types graded against a rubric.
func correctText(q assessment.Question, words Strings) string {
	c := q.Config
	switch q.Type {
	case assessment.TypeMultipleChoice, assessment.TypeMultipleSelect:
		var texts []string
		list, _ := c["options"].([]any)
		for _, o := range list {
			if opt, _ := o.(map[string]any); opt["correct"] == true {
				texts = append(texts, fmt.Sprint(opt["text"]))
			}
		}
		return strings.Join(texts, ", ")
	case assessment.TypeTrueFalse:
		return boolText(c["correct"] == true, words)
	case assessment.TypeShortText:
		list, _ := c["acceptedAnswers"].([]any)
		if len(list) > 0 {
			return fmt.Sprint(list[0])
		}
	case assessment.TypeNumeric:
		text := fmt.Sprint(c["correct"])
		if tol, _ := c["tolerance"].(float64); tol > 0 {
			text += " ± " + fmt.Sprint(tol)
		}
		if unit, _ := c["unit"].(string); unit != "" {
			text += " " + unit
		}
		return text
	}
	return ""
}

// resultPollWait is how long the result page's poll waits for grading to
// finish before it answers and asks again.
const resultPollWait = 20 * time.Second

// studentResult shows a result with per-question feedback; while grading
// runs, the page asks for itself again (htmx) with ?wait, which the server
// holds until grading finishes (a long poll, decision 0135).
func (s *Service) studentResult(w http.ResponseWriter, r *http.Request, sess Session) {
	caller, ok := s.actorCaller(w, r, sess)
	if !ok {
		return
	}
	ctx := tenancy.WithCaller(r.Context(), caller)
	var wait time.Duration
	if r.URL.Query().Has("wait") {
		wait = resultPollWait
	}
	result, err := s.resources.AwaitResult(ctx, "", sess.ResultID, wait)
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	_, questions, err := s.resources.AnswerSheet(ctx, result.ExamID)
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	byID := map[string]assessment.SheetQuestion{}
	for _, q := range questions {
		byID[q.ID] = q
	}
	correct := s.correctAnswers(r.Context(), sess, result.ExamID)
	rows := make([]resultRow, len(result.Answers))
	for i, a := range result.Answers {
		q := byID[a.QuestionID]
		rows[i] = resultRow{Prompt: q.Prompt, Answer: answerText(q, a, sess.Strings), Files: fileLinks(a.Files), Feedback: a.Feedback,
			Score: a.Score, MaxScore: a.MaxScore, Graded: a.Status != assessment.AnswerPending}
		if rows[i].Graded {
			rows[i].Correct = correct[a.QuestionID]
		}
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
	caller, ok := s.actorCaller(w, r, sess)
	if !ok {
		return Session{}, nil, false
	}
	return sess, tenancy.WithCaller(r.Context(), caller), true
}

// actorCaller is the caller sess acts as, or false once it has answered
// the request: the expired page when the actor is gone, or the failure
// web.Fail gives anything else (a database down is no expired session).
func (s *Service) actorCaller(w http.ResponseWriter, r *http.Request, sess Session) (*tenancy.Caller, bool) {
	caller, err := s.Caller(r.Context(), sess)
	switch {
	case err == nil:
		return caller, true
	case errs.Is(err, errs.KindNotFound):
		web.RenderFramed(w, r, http.StatusNotFound, "embed-expired.html", view{Session: sess, TitleKey: "embed.expired.title"}, sess.AllowedOrigins)
	default:
		web.Fail(w, r, err)
	}
	return nil, false
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
	var g generation.Generation
	err := formText(r)
	if err == nil {
		g, err = s.generator.Create(ctx, generation.Params{Subject: field("subject"), StudentLevel: field("studentLevel"),
			DurationMinutes: duration, Taxonomy: field("taxonomy"), QuestionTypes: types})
	}
	if err != nil {
		var status int
		status, v.Error = web.Failure(r.Context(), err)
		web.RenderFramed(w, r, status, "embed-generate.html", v, sess.AllowedOrigins)
		return
	}
	http.Redirect(w, r, "/embed/"+sess.ID+"/generations/"+g.ID, http.StatusSeeOther)
}

type generationView struct {
	view
	Gen generation.Generation
	// Elapsed is how long the generation has run, in whole seconds.
	Elapsed int
}

// generationPage shows a generation's progress: what was asked, how long
// it has run and, when done, the exam to open in the authoring flow. htmx
// polls it; once the exam is ready a poll opens the editor by itself.
func (s *Service) generationPage(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowGenerateExam)
	if !ok {
		return
	}
	g, err := s.generator.Get(ctx, r.PathValue("generation"))
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	if g.Status == "ready" && r.Header.Get("HX-Request") == "true" {
		s.openEditor(w, r, sess, ctx, g.ExamID)
		return
	}
	end := s.now()
	if g.Status != "running" {
		end = g.UpdatedAt
	}
	web.RenderFramed(w, r, http.StatusOK, "embed-generation.html",
		generationView{view: view{Session: sess, TitleKey: "embed.generate.title", Poll: g.Status == "running"}, Gen: g,
			Elapsed: int(end.Sub(g.CreatedAt).Seconds())}, sess.AllowedOrigins)
}

// editGenerated opens a ready generation's exam in the authoring flow.
func (s *Service) editGenerated(w http.ResponseWriter, r *http.Request) {
	sess, ctx, ok := s.asActor(w, r, FlowGenerateExam)
	if !ok {
		return
	}
	g, err := s.generator.Get(ctx, r.PathValue("generation"))
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	if g.Status != "ready" {
		http.Error(w, "this exam is not ready", http.StatusNotFound)
		return
	}
	s.openEditor(w, r, sess, ctx, g.ExamID)
}

// openEditor hands the teacher on to an authoring session of examID that
// inherits the generate-exam session's actor, theme, origins and expiry
// (the teacher was already allowed to create the exam, so to edit it).
func (s *Service) openEditor(w http.ResponseWriter, r *http.Request, sess Session, ctx context.Context, examID string) {
	next := sess
	next.ID, next.Flow, next.ExamID, next.Presets = newID(), FlowAuthoring, examID, nil
	err := s.store.Save(ctx, next)
	if err == nil {
		err = s.actors.RecordAction(ctx, "embed_session.created", audit.Target{Type: "user", ID: next.ActorID},
			map[string]any{"flow": string(next.Flow), "examId": examID, "expiresAt": next.ExpiresAt.Format(time.RFC3339)})
	}
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", "/embed/"+next.ID)
		return
	}
	http.Redirect(w, r, "/embed/"+next.ID, http.StatusSeeOther)
}

// formText applies the API's text rule to r's posted form: PostgreSQL
// cannot store a NUL or invalid UTF-8 as text, so such a field is the
// sender's mistake, named as the API names it, rather than a failed query.
func formText(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return errs.Invalid("", "the form could not be read")
	}
	switch field, problem := textcheck.FormProblem(r.PostForm); {
	case problem == "":
		return nil
	case field == "":
		return errs.Invalid("", "a field name %s", problem)
	default:
		return errs.Invalid(field, "%s", problem)
	}
}

// pageError is the message a page shows for err, in place of the page
// (web.Failure).
func pageError(ctx context.Context, err error) string {
	_, message := web.Failure(ctx, err)
	return message
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
		web.Fail(w, r, err)
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
