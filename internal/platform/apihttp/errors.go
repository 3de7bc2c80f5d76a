package apihttp

import (
	"context"
	"errors"
	"log/slog"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/textcheck"
)

// ErrorDomain is the ErrorInfo domain of every assessd error.
const ErrorDomain = "assessd"

var kindCodes = map[errs.Kind]connect.Code{
	errs.KindInvalid:            connect.CodeInvalidArgument,
	errs.KindUnauthenticated:    connect.CodeUnauthenticated,
	errs.KindForbidden:          connect.CodePermissionDenied,
	errs.KindNotFound:           connect.CodeNotFound,
	errs.KindConflict:           connect.CodeAlreadyExists,
	errs.KindFailedPrecondition: connect.CodeFailedPrecondition,
	errs.KindRateLimited:        connect.CodeResourceExhausted,
	errs.KindUnavailable:        connect.CodeUnavailable,
}

// ToConnect maps any error to the Connect error the client sees. Domain
// errors keep their message and gain an ErrorInfo (and a BadRequest for
// invalid input); anything else is logged and becomes an opaque internal
// error, so internal details never reach the client.
func ToConnect(ctx context.Context, err error) *connect.Error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	e, unhandled := errs.Explain(err)
	if e == nil {
		if errors.Is(err, context.Canceled) {
			return connect.NewError(connect.CodeCanceled, errors.New("request canceled"))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return connect.NewError(connect.CodeDeadlineExceeded, errors.New("request timed out"))
		}
		slog.ErrorContext(ctx, "internal error", "err", err)
		return NewError(connect.CodeInternal, "INTERNAL", "internal error", "", nil)
	}
	switch {
	case unhandled: // the site should say what the refusal means there
		slog.ErrorContext(ctx, "unhandled constraint violation", "reason", e.Reason, "err", err)
	case e.Cause != nil:
		slog.WarnContext(ctx, "request failed", "reason", e.Reason, "err", e.Cause)
	}
	return NewError(kindCodes[e.Kind], e.Reason, e.Message, e.Field, e.Meta)
}

// NewError builds a Connect error with an ErrorInfo detail and, when field
// is set, a BadRequest field violation.
func NewError(code connect.Code, reason, message, field string, meta map[string]string) *connect.Error {
	// Messages may quote client input: keep them printable UTF-8 (the
	// encoder of the error body refuses anything else) and short.
	message = textcheck.Sanitize(message, 500)
	field = textcheck.Sanitize(field, 200)
	ce := connect.NewError(code, errors.New(message))
	if d, err := connect.NewErrorDetail(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain, Metadata: meta}); err == nil {
		ce.AddDetail(d)
	}
	if field != "" {
		br := &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: message}}}
		if d, err := connect.NewErrorDetail(br); err == nil {
			ce.AddDetail(d)
		}
	}
	if code == connect.CodeUnavailable {
		// A dependency is down or busy: a client that backs off for a
		// second finds it back in the usual case (a failover, a burst).
		ce.Meta().Set("Retry-After", "1")
	}
	if code == connect.CodeUnauthenticated {
		ce.Meta().Set("WWW-Authenticate", `Bearer realm="assessd"`)
	}
	if scope := meta["scope"]; code == connect.CodePermissionDenied && scope != "" {
		ce.Meta().Set("WWW-Authenticate", `Bearer realm="assessd", error="insufficient_scope", scope="`+scope+`"`)
	}
	return ce
}
