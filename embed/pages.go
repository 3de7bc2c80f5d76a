package embed

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/assessd/assessd/errs"
	"github.com/assessd/assessd/web"
)

// generatableTypes are the question types the generate-exam form offers.
var generatableTypes = []string{"multiple_choice", "true_false", "short_text", "numeric", "essay"}

// view is what every flow page renders from.
type view struct {
	Session
	TitleKey string
	Error    string
}

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
	mux.Handle("GET /embed/assets/devtools.js", web.EmbedAssets())
	mux.HandleFunc("GET /embed/{id}", s.page)
}

// open loads a page's session, or answers the friendly expired page (404)
// or an unavailable page (503).
func (s *Service) open(w http.ResponseWriter, r *http.Request) (Session, bool) {
	sess, err := s.Open(r.Context(), r.PathValue("id"))
	switch {
	case err == nil:
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
	default:
		// The authoring and student flows render the exam and result of
		// the assessment service, which lands with it.
		web.RenderFramed(w, r, http.StatusNotImplemented, "embed-expired.html", view{Session: sess, TitleKey: "embed.expired.title",
			Error: "this flow is not available yet"}, sess.AllowedOrigins)
	}
}
