// Package errs defines the domain errors every package returns and the API
// layer maps to status codes in one place. Messages are written for the
// client: they never carry internal values.
package errs

import (
	"errors"
	"fmt"
	"net/http"
)

// Kind classifies an error by what the client should do about it.
type Kind int

// The kinds, each mapping to one HTTP status (see API.md).
const (
	KindInvalid            Kind = iota + 1 // 400: fix the request
	KindUnauthenticated                    // 401: present valid credentials
	KindForbidden                          // 403: not allowed for this caller
	KindNotFound                           // 404: no such resource in this organization
	KindConflict                           // 409: state conflict (duplicate, in use)
	KindFailedPrecondition                 // 400/412: the resource is not in a usable state
	KindRateLimited                        // 429: slow down
	KindUnavailable                        // 503: a dependency is down
)

// HTTPStatus is the status the API answers an error of kind k with. Pages
// that show the error on a form answer with it too.
func (k Kind) HTTPStatus() int {
	switch k {
	case KindInvalid, KindFailedPrecondition:
		return http.StatusBadRequest
	case KindUnauthenticated:
		return http.StatusUnauthorized
	case KindForbidden:
		return http.StatusForbidden
	case KindNotFound:
		return http.StatusNotFound
	case KindConflict:
		return http.StatusConflict
	case KindRateLimited:
		return http.StatusTooManyRequests
	case KindUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Error is a domain error with a stable machine-readable reason.
type Error struct {
	Kind Kind
	// Reason is a stable UPPER_SNAKE identifier, e.g. USER_NOT_FOUND.
	Reason string
	// Message is human-readable and safe to show to the client.
	Message string
	// Field names the offending request field for KindInvalid, in
	// lowerCamelCase dotted form ("metadata.color").
	Field string
	// Meta carries extra public details, e.g. the missing "scope".
	Meta map[string]string
	// Cause is the underlying error, for logs only.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Explain is the domain error err is, or stands for. The *Error in err's
// chain comes first; else a refusal no site translated (an error in the
// chain with an Unhandled method: store.ConstraintError, decision 0177)
// gives its meaning, with unhandled true, since the site should have said
// it. It is nil for anything else: the server's own fault.
func Explain(err error) (e *Error, unhandled bool) {
	if e, ok := As(err); ok {
		return e, false
	}
	var refusal interface{ Unhandled() *Error }
	if errors.As(err, &refusal) {
		if e := refusal.Unhandled(); e != nil {
			return e, true
		}
	}
	return nil, false
}

// Is reports whether err is a domain error of kind k.
func Is(err error, k Kind) bool {
	e, ok := As(err)
	return ok && e.Kind == k
}

// Invalid reports a bad value of one request field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Reason: "INVALID_ARGUMENT", Field: field, Message: fieldMessage(field, format, args)}
}

// NotFound reports an unknown id; resource is the type name, e.g. "user".
func NotFound(resource string) *Error {
	return &Error{Kind: KindNotFound, Reason: upper(resource) + "_NOT_FOUND", Message: resource + " not found"}
}

// Forbidden reports an authenticated caller that may not do this.
func Forbidden(reason, format string, args ...any) *Error {
	return &Error{Kind: KindForbidden, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Conflict reports a clash with the current state.
func Conflict(reason, format string, args ...any) *Error {
	return &Error{Kind: KindConflict, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// FailedPrecondition reports a resource that is not in a usable state for
// the operation, e.g. a deprecated question type; the request itself is
// well formed.
func FailedPrecondition(reason, format string, args ...any) *Error {
	return &Error{Kind: KindFailedPrecondition, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Unauthenticated reports missing or invalid credentials.
func Unauthenticated(format string, args ...any) *Error {
	return &Error{Kind: KindUnauthenticated, Reason: "UNAUTHENTICATED", Message: fmt.Sprintf(format, args...)}
}

// Unavailable reports a dependency that is down.
func Unavailable(reason, format string, args ...any) *Error {
	return &Error{Kind: KindUnavailable, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func fieldMessage(field, format string, args []any) string {
	msg := fmt.Sprintf(format, args...)
	if field == "" {
		return msg
	}
	return field + ": " + msg
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c == ' ' || c == '-':
			b[i] = '_'
		}
	}
	return string(b)
}

// WithCause records the underlying error for logs and returns e.
func (e *Error) WithCause(err error) *Error {
	e.Cause = err
	return e
}
