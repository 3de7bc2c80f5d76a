package web

import (
	"net/http"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/textcheck"
)

// TextRoutes registers pages whose requests are first held to the API's
// text rule (textcheck): the path, the query and the form. A NUL, which
// PostgreSQL cannot store, would otherwise reach a query and be answered
// as an outage.
type TextRoutes struct{ Mux *http.ServeMux }

// HandleFunc registers h for pattern behind the text rule.
func (t TextRoutes) HandleFunc(pattern string, h http.HandlerFunc) {
	t.Mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if problem := textProblem(r); problem != "" {
			FailPage(w, r, http.StatusBadRequest, "Request refused", problem)
			return
		}
		h(w, r)
	})
}

// textProblem describes the first text of r that breaks the rule, or ""
// when all of it keeps it.
func textProblem(r *http.Request) string {
	if problem := textcheck.Problem(r.URL.Path); problem != "" {
		return "The address " + problem + "."
	}
	if err := r.ParseForm(); err != nil {
		return "The form could not be read."
	}
	switch field, problem := textcheck.FormProblem(r.Form); {
	case problem == "":
		return ""
	case field == "":
		return "A field name " + problem + "."
	default:
		return "The field " + field + " " + problem + "."
	}
}

// FailPage answers the signed-in and sign-in pages' error page: title and
// message with status.
func FailPage(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	Render(w, r, status, "error.html", map[string]string{"Title": title, "Message": message})
}

// FailedPage answers a page whose work failed with err: "Try again later"
// with message, which says what did not work in the user's terms, and the
// status Failure gives err (which logs what the page does not say).
func FailedPage(w http.ResponseWriter, r *http.Request, err error, message string) {
	status, _ := Failure(r.Context(), err)
	FailPage(w, r, status, "Try again later", message)
}

// FormError shows a domain error's message on the page the form came
// from, through retry, with the status the API answers that error with;
// anything else is the page's failure.
func FormError(w http.ResponseWriter, r *http.Request, err error, retry func(msg string, status int)) {
	if e, ok := errs.As(err); ok && e.Kind != errs.KindUnavailable {
		retry(e.Message, e.Kind.HTTPStatus())
		return
	}
	FailedPage(w, r, err, "That did not work right now.")
}
