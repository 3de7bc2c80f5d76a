package apihttp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/platform/textcheck"
)

// FieldOf finds the request field that the path or query parameter param
// (as the transcoder spells it: "page_size", "filter.actor_id") of the REST
// route of method and path sets: its public lowerCamelCase name and its
// descriptor, or param sanitized and nil when the route has no such field.
// Package api provides it from the google.api.http rules (api.FieldOf).
type FieldOf func(method, path, param string) (name string, fd protoreflect.FieldDescriptor)

// invalidParameter matches the transcoder's errors for path and query
// values it cannot decode: `invalid parameter "page_size" value for type
// "int32": abc` and `invalid parameter "page_size": <cause>`.
var invalidParameter = regexp.MustCompile(`^invalid parameter "([^"]+)"`)

// ShapeError is the one place that turns an error response of the REST
// surface which lacks the API's shape into one that has it: an ErrorInfo
// with a stable reason, a message and a field violation naming the public
// field. The transcoder writes such errors for path and query values it
// cannot decode, the handlers for bodies they cannot decode, and routing
// writes plain-text ones (405, 415). It returns
// nil when the response is already shaped. method and path are the
// request's as the client sent them (the transcoder rewrites the path);
// contentType and body are the original response's; fieldOf names the
// parameters of the route (nil names none). Server errors never pass their
// text on.
func ShapeError(ctx context.Context, fieldOf FieldOf, method, path string, code int, contentType string, body []byte) *connect.Error {
	st := &status.Status{}
	if strings.Contains(contentType, "json") && protojson.Unmarshal(body, st) == nil {
		for _, d := range st.Details {
			if d.MessageIs(&errdetails.ErrorInfo{}) {
				return nil
			}
		}
	} else {
		st = &status.Status{Code: int32(statusCode(code)), Message: strings.TrimSpace(string(body))}
	}
	if code >= 500 {
		slog.ErrorContext(ctx, "unshaped server error", "status", code, "message", st.Message)
		return NewError(connect.CodeInternal, "INTERNAL", "internal error", "", nil)
	}
	// A body the transcoder passed through was decoded by the handler,
	// whose protocol keeps only the message of the codec's error.
	if body, ok := strings.CutPrefix(st.Message, "unmarshal message: "); ok && strings.HasPrefix(body, invalidBody) {
		return NewError(connect.CodeInvalidArgument, "INVALID_BODY", body, problemField(body), nil)
	}
	if m := invalidParameter.FindStringSubmatch(st.Message); m != nil {
		return parameterError(fieldOf, method, path, m[1])
	}
	text := http.StatusText(code)
	if text == "" {
		text = "Request failed" // a status net/http has no name for
	}
	msg := text
	if connect.Code(st.Code) != connect.CodeInvalidArgument && st.Message != "" && len(st.Message) <= 300 && !leaksInternals(st.Message) {
		msg = st.Message
	}
	reason := strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.ToUpper(text)) // "I'm a teapot" -> I_M_A_TEAPOT
	if code == http.StatusBadRequest {
		reason, msg = "INVALID_REQUEST", "the request is malformed"
	}
	return NewError(statusCode(code), reason, msg, "", nil)
}

// statusCodes maps the HTTP statuses that routing answers with itself to
// the Connect code of the JSON error body.
var statusCodes = map[int]connect.Code{
	http.StatusBadRequest:            connect.CodeInvalidArgument,
	http.StatusNotFound:              connect.CodeNotFound,
	http.StatusMethodNotAllowed:      connect.CodeUnimplemented,
	http.StatusUnsupportedMediaType:  connect.CodeInvalidArgument,
	http.StatusRequestURITooLong:     connect.CodeInvalidArgument,
	http.StatusRequestEntityTooLarge: connect.CodeResourceExhausted,
}

func statusCode(code int) connect.Code {
	if c, ok := statusCodes[code]; ok {
		return c
	}
	return connect.CodeUnknown
}

// leaksInternals reports whether a message names protobuf types or the
// libraries underneath.
func leaksInternals(msg string) bool {
	for _, s := range []string{"assessd.v1", "google.", "proto", "codec", "field path"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// parameterError describes a path or query value of the wrong type.
func parameterError(fieldOf FieldOf, method, path, param string) *connect.Error {
	field, fd := textcheck.Sanitize(param, 64), protoreflect.FieldDescriptor(nil)
	if fieldOf != nil {
		field, fd = fieldOf(method, path, param)
	}
	reason, expected := "INVALID_ARGUMENT", expectation(fd)
	switch field {
	case "pageSize":
		// The same words as paging.Parse uses for an out-of-range size.
		reason, expected = "INVALID_PAGE_SIZE", fmt.Sprintf("must be a whole number between 1 and %d", paging.MaxSize)
	case "pageToken":
		reason = "INVALID_PAGE_TOKEN"
	}
	return NewError(connect.CodeInvalidArgument, reason, field+": "+expected, field, nil)
}

// expectation says what a value of field's type looks like.
func expectation(fd protoreflect.FieldDescriptor) string {
	if fd == nil {
		return "has an invalid value"
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return "must be a whole number between -2147483648 and 2147483647"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return "must be a whole number between 0 and 4294967295"
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "must be a whole number"
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		return "must be a number"
	case protoreflect.BoolKind:
		return "must be true or false"
	case protoreflect.EnumKind:
		return "is not one of the allowed values"
	case protoreflect.MessageKind:
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			return "must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z"
		case "google.protobuf.Duration":
			return "must be a number of seconds with an s, e.g. 20s"
		}
	}
	return "has an invalid value"
}

var (
	protojsonPosition = regexp.MustCompile(`^proto:\s*(syntax error\s*)?(\(line \d+:\d+\):\s*)?`)
	protojsonField    = regexp.MustCompile(`field "?([A-Za-z_][A-Za-z0-9_.]*)"?`)
	// protojsonTypes names the protobuf types protojson mentions, with the
	// words a client understands.
	protojsonTypes = strings.NewReplacer(
		"google.protobuf.Value", "JSON value",
		"google.protobuf.Struct", "JSON object",
		"google.protobuf.ListValue", "JSON array",
		"google.protobuf.Timestamp", "RFC 3339 time",
		"google.protobuf.Duration", "duration",
	)
	internalName = regexp.MustCompile(`(assessd\.v1|google\.protobuf)\.[A-Za-z0-9_.]+`)
)

// BodyError rewrites a protojson error ("proto: (line 1:2): unknown field
// "x"") into a client-facing InvalidArgument naming the field; nil stays
// nil.
func BodyError(err error) error {
	if err == nil {
		return nil
	}
	msg, field := BodyProblem(err)
	return NewError(connect.CodeInvalidArgument, "INVALID_BODY", msg, field, nil)
}

// invalidBody starts the message of every body decoding error.
const invalidBody = "invalid request body: "

// BodyProblem says what is wrong with a body protojson could not decode,
// in a client's words, and names the field when there is one.
func BodyProblem(err error) (msg, field string) {
	msg = protojsonPosition.ReplaceAllString(strings.ReplaceAll(err.Error(), "\u00a0", " "), "")
	msg = internalName.ReplaceAllString(protojsonTypes.Replace(msg), "value")
	return invalidBody + msg, problemField(msg)
}

// problemField returns the field a decoding error message names, or "".
func problemField(msg string) string {
	if m := protojsonField.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}
