package apihttp

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/internal/platform/textcheck"
)

// FuzzBodyError checks that whatever a client sends, a body protojson
// refuses is a 400 whose message is printable and names no internal type.
func FuzzBodyError(f *testing.F) {
	for _, s := range []string{``, `{`, `{"name":1}`, `{"metadata":{"a":1e400}}`, "{\"name\":\"\xff\"}", `{"unknown":1}`, `[]`, `{"metadata":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := BodyError(protojson.Unmarshal(data, &v1.CreateUserRequest{}))
		if err == nil {
			return
		}
		var ce *connect.Error
		if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument {
			t.Fatalf("%q: %v is not InvalidArgument", data, err)
		}
		if !utf8.ValidString(ce.Message()) || strings.ContainsRune(ce.Message(), 0) || leaksInternals(ce.Message()) {
			t.Fatalf("%q: message %q", data, ce.Message())
		}
	})
}

var upperSnake = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func reasonOf(ce *connect.Error) string {
	for _, d := range ce.Details() {
		if v, err := d.Value(); err == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok {
				return info.Reason
			}
		}
	}
	return ""
}

// auditLogField names parameters as the audit log listing's route would:
// a request with a page size, a page token and times.
func auditLogField(_, _, param string) (string, protoreflect.FieldDescriptor) {
	fields := (&v1.ListAuditLogsRequest{}).ProtoReflect().Descriptor().Fields()
	if fd := fields.ByName(protoreflect.Name(param)); fd != nil {
		return fd.JSONName(), fd
	}
	return textcheck.Sanitize(param, 64), nil
}

// FuzzShapeError checks that any error response of the REST surface comes
// out with an ErrorInfo and a message free of internal names, whether or
// not the route's parameters are known.
func FuzzShapeError(f *testing.F) {
	f.Add("GET", "/audit-logs", 400, "application/json", []byte(`{"code":3,"message":"invalid parameter \"page_size\" value for type \"int32\": abc"}`))
	f.Add("GET", "/audit-logs", 400, "application/json", []byte(`{"code":3,"message":"invalid parameter \"since\" value for type \"message\": \"x\""}`))
	f.Add("POST", "/users", 500, "application/json", []byte(`{"code":2,"message":"proto: field assessd.v1.CreateUserRequest.name contains invalid UTF-8"}`))
	f.Add("DELETE", "/exams", 405, "text/plain", []byte("Method Not Allowed\n"))
	f.Add("GET", "/exams", 418, "text/plain", []byte("I'm a teapot"))
	f.Add("GET", "/exams/x", 400, "application/json", []byte(`{"code":3,"message":"in field path \"a.b\": field of type assessd.v1.X"}`))
	f.Fuzz(func(t *testing.T, method, path string, code int, contentType string, body []byte) {
		if code < 400 || code > 599 {
			return
		}
		for _, fieldOf := range []FieldOf{nil, auditLogField} {
			ce := ShapeError(context.Background(), fieldOf, method, path, code, contentType, body)
			if ce == nil {
				return // the body already carries an ErrorInfo
			}
			var info bool
			for _, d := range ce.Details() {
				v, err := d.Value()
				if _, ok := v.(*errdetails.ErrorInfo); ok && err == nil {
					info = true
				}
			}
			if !info || !upperSnake.MatchString(reasonOf(ce)) || ce.Message() == "" || leaksInternals(ce.Message()) || (code >= 500 && ce.Code() != connect.CodeInternal) {
				t.Fatalf("ShapeError(%q %q %d %q) = %v", method, path, code, body, ce)
			}
		}
	})
}

// TestParameterErrorsNameThePublicField: a path or query value of the
// wrong type names the field as clients spell it and says what it must be.
func TestParameterErrorsNameThePublicField(t *testing.T) {
	for _, c := range []struct {
		param  string
		reason string
		msg    string
	}{
		{"page_size", "INVALID_PAGE_SIZE", "pageSize: must be a whole number between 1 and 200"},
		{"since", "INVALID_ARGUMENT", "since: must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z"},
		{"nope", "INVALID_ARGUMENT", "nope: has an invalid value"},
	} {
		body := []byte(`{"code":3,"message":"invalid parameter \"` + c.param + `\" value for type \"x\": y"}`)
		ce := ShapeError(context.Background(), auditLogField, "GET", "/audit-logs", 400, "application/json", body)
		if ce == nil || reasonOf(ce) != c.reason || ce.Message() != c.msg {
			t.Errorf("%s: %v, want %s %q", c.param, ce, c.reason, c.msg)
		}
	}
}
