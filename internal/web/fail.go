package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/assessd/assessd/internal/platform/errs"
)

// Failure is the status a page answers a request that failed with err,
// and the message it may show. A domain error, or a database refusal no
// site translated (errs.Explain), has the status the API answers its kind
// with and its own message. Anything else is the
// server's fault: it is logged, since the page says nothing of it, and
// answered 500, or 503 when the request's time ran out, which a retry may
// cure.
func Failure(ctx context.Context, err error) (status int, message string) {
	if e, unhandled := errs.Explain(err); e != nil {
		switch {
		case unhandled: // the site should say what the refusal means there
			slog.ErrorContext(ctx, "unhandled constraint violation", "reason", e.Reason, "err", err)
		case e.Cause != nil:
			slog.WarnContext(ctx, "page request failed", "reason", e.Reason, "err", e.Cause)
		}
		return e.Kind.HTTPStatus(), e.Message
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		slog.WarnContext(ctx, "page request ran out of time", "err", err)
		return http.StatusServiceUnavailable, "This took too long; please try again."
	}
	slog.ErrorContext(ctx, "page request failed", "err", err)
	return http.StatusInternalServerError, "Something went wrong; please try again."
}

// Fail answers a page request that failed with err as Failure says, in
// plain text.
func Fail(w http.ResponseWriter, r *http.Request, err error) {
	status, message := Failure(r.Context(), err)
	http.Error(w, message, status)
}
