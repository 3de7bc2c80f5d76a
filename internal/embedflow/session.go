// Package embedflow implements embed sessions: short-lived grants, kept in
// Redis, that let a host product frame one of assessd's flows for one actor.
package embedflow

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/assessd/assessd/internal/platform/errs"
)

// Flow is an embeddable flow.
type Flow string

// The flows of API.md.
const (
	FlowAuthoring      Flow = "authoring"
	FlowGenerateExam   Flow = "generate-exam"
	FlowStudentExam    Flow = "student-exam"
	FlowStudentResults Flow = "student-results"
)

// Flows lists every flow.
var Flows = []Flow{FlowAuthoring, FlowGenerateExam, FlowStudentExam, FlowStudentResults}

// Student reports whether the flow is taken by a student.
func (f Flow) Student() bool { return f == FlowStudentExam || f == FlowStudentResults }

// Lifetimes of a session.
const (
	DefaultTTL = time.Hour
	MinTTL     = time.Minute
	MaxTTL     = 24 * time.Hour
)

// Session is one embed session.
type Session struct {
	ID             string         `json:"id"`
	OrgID          string         `json:"orgId"`
	ActorID        string         `json:"actorId"`
	Flow           Flow           `json:"flow"`
	ExamID         string         `json:"examId,omitempty"`
	ResultID       string         `json:"resultId,omitempty"`
	Strings        Strings        `json:"strings,omitempty"`
	Look           Look           `json:"look,omitzero"`
	Presets        map[string]any `json:"presets,omitempty"`
	AllowedOrigins []string       `json:"allowedOrigins,omitempty"`
	// GrantedBy is the staff user who created the session; the results
	// flow reads correct answers as them (showCorrectAnswers).
	GrantedBy string    `json:"grantedBy,omitempty"`
	ExpiresAt time.Time `json:"expiresAt"`
	// AssignmentID makes a student-exam session its actor's attempt of
	// the assignment; AttemptID is that attempt once the page started or
	// resumed it (decision 0194).
	AssignmentID string `json:"assignmentId,omitempty"`
	AttemptID    string `json:"attemptId,omitempty"`
}

// generatePresets are the presets of the generate-exam flow and the check
// of each value.
var generatePresets = map[string]func(any) bool{
	"subject":           textUpTo(200),
	"studentLevel":      textUpTo(100),
	"taxonomy":          textUpTo(100),
	"durationMinutes":   func(v any) bool { n, ok := v.(float64); return ok && n == float64(int(n)) && n >= 1 && n <= 600 },
	"questionTypes":     stringList,
	"hideSubject":       isBool,
	"hideStudentLevel":  isBool,
	"hideDuration":      isBool,
	"hideTaxonomy":      isBool,
	"hideQuestionTypes": isBool,
}

func textUpTo(n int) func(any) bool {
	return func(v any) bool {
		s, ok := v.(string)
		return ok && strings.TrimSpace(s) != "" && utf8.RuneCountInString(s) <= n
	}
}

func isBool(v any) bool { _, ok := v.(bool); return ok }

func stringList(v any) bool {
	list, ok := v.([]any)
	if !ok || len(list) == 0 || len(list) > 20 {
		return false
	}
	for _, item := range list {
		if s, ok := item.(string); !ok || s == "" {
			return false
		}
	}
	return true
}

// flowPresets are the presets each flow takes and the check of each value.
var flowPresets = map[Flow]map[string]func(any) bool{
	FlowGenerateExam: generatePresets,
	// layout: "all" questions on one page (default) or "paged", one per screen.
	FlowStudentExam: {"layout": func(v any) bool { return v == "all" || v == "paged" }},
	// showCorrectAnswers: the results show each question's correct answer.
	FlowStudentResults: {"showCorrectAnswers": isBool},
}

// validatePresets checks a flow's presets, and that a hidden required
// generate-exam field is preset.
func validatePresets(flow Flow, presets map[string]any) error {
	if len(presets) == 0 {
		return nil
	}
	checks, ok := flowPresets[flow]
	if !ok {
		return errs.Invalid("presets", "the %s flow takes no presets", flow)
	}
	for k, v := range presets {
		check, ok := checks[k]
		if !ok {
			return errs.Invalid("presets."+k, "is not a preset of the %s flow", flow)
		}
		if !check(v) {
			return errs.Invalid("presets."+k, "has an invalid value")
		}
	}
	if presets["hideSubject"] == true && presets["subject"] == nil {
		return errs.Invalid("presets.hideSubject", "needs a subject preset: the subject is required")
	}
	return nil
}

// validateTheme checks theme.strings against the catalogue.
func validateTheme(strs map[string]string) error {
	if len(strs) > len(Catalogue) {
		return errs.Invalid("theme.strings", "has more keys than the catalogue")
	}
	for k, v := range strs {
		if _, ok := Catalogue[k]; !ok {
			return errs.Invalid("theme.strings."+k, "is not a translation key; see the Translation keys view of the dev tools")
		}
		if utf8.RuneCountInString(v) > 200 {
			return errs.Invalid("theme.strings."+k, "must be at most 200 characters")
		}
	}
	return nil
}

// validateOrigins checks allowedOrigins: scheme://host[:port], https (or
// http on localhost).
func validateOrigins(origins []string) ([]string, error) {
	if len(origins) > 10 {
		return nil, errs.Invalid("allowedOrigins", "at most 10 origins")
	}
	var out []string
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil ||
			(u.Scheme != "https" && !(u.Scheme == "http" && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1"))) {
			return nil, errs.Invalid("allowedOrigins", "%q must be an origin such as https://lms.example.com", o)
		}
		origin := u.Scheme + "://" + u.Host
		if !slices.Contains(out, origin) {
			out = append(out, origin)
		}
	}
	return out, nil
}

// ttl bounds the requested lifetime.
func ttl(seconds int32) (time.Duration, error) {
	if seconds == 0 {
		return DefaultTTL, nil
	}
	d := time.Duration(seconds) * time.Second
	if d < MinTTL || d > MaxTTL {
		return 0, errs.Invalid("expiresIn", "must be between %d and %d seconds", int(MinTTL.Seconds()), int(MaxTTL.Seconds()))
	}
	return d, nil
}

func flowOf(s string) (Flow, error) {
	f := Flow(s)
	if !slices.Contains(Flows, f) {
		return "", errs.Invalid("flow", "must be one of %s", fmt.Sprint(Flows))
	}
	return f, nil
}
