package api

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/textcheck"
)

// maxValueDepth bounds the nesting of free-form JSON (metadata, config,
// answers): deeper documents are refused before they reach jsonb.
const maxValueDepth = 32

// textInterceptor holds every request message to textcheck's rule,
// whichever protocol carried it: each string (fields, map keys and the
// strings inside free-form Struct/Value content), each number finite, and
// free-form content at most maxValueDepth deep. The violation names the
// public lowerCamelCase field path ("metadata.color", "answers[0].value").
func textInterceptor() connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if msg, ok := req.Any().(proto.Message); ok {
				if field, problem := requestProblem(msg.ProtoReflect()); problem != "" {
					return nil, invalidField(field, problem)
				}
			}
			return next(ctx, req)
		}
	}
}

func invalidField(field, problem string) *connect.Error {
	return apihttp.NewError(connect.CodeInvalidArgument, "INVALID_ARGUMENT", field+": "+problem, field, nil)
}

// requestProblem returns the first field of a request that breaks the
// rule, and what is wrong with it.
func requestProblem(m protoreflect.Message) (field, problem string) {
	field, problem = messageProblem(m, 0)
	return strings.TrimPrefix(field, "."), problem
}

// messageProblem returns the first field of m that breaks the rule, and
// what is wrong with it. The field is a path relative to m (".name",
// "[2].name"), built only once a problem is found: a request that keeps
// the rule allocates no path.
func messageProblem(m protoreflect.Message, depth int) (field, problem string) {
	switch m.Descriptor().FullName() {
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return valueProblem(m, depth)
	}
	// A loop rather than m.Range, whose callback costs allocations on
	// every message of every request; it also reports the first problem
	// in declaration order, where Range's order is unspecified.
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		if field, problem = fieldProblem(fd, m.Get(fd), depth); problem != "" {
			return "." + fd.JSONName() + field, problem
		}
	}
	return "", ""
}

func fieldProblem(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) (string, string) {
	switch {
	case fd.IsList():
		l := v.List()
		for i := range l.Len() {
			if f, p := scalarProblem(fd, l.Get(i), depth); p != "" {
				return index(i) + f, p
			}
		}
	case fd.IsMap():
		var field, problem string
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			key := k.String()
			if problem = textcheck.Problem(key); problem != "" {
				field, problem = "", "keys "+problem
				return false
			}
			if field, problem = scalarProblem(fd.MapValue(), mv, depth); problem != "" {
				field = "." + key + field
			}
			return problem == ""
		})
		return field, problem
	default:
		return scalarProblem(fd, v, depth)
	}
	return "", ""
}

func scalarProblem(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) (string, string) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if p := textcheck.Problem(v.String()); p != "" {
			return "", p
		}
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return "", "must be a finite number"
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return messageProblem(v.Message(), depth)
	}
	return "", ""
}

// valueProblem walks free-form JSON, naming its paths as the client wrote
// them (config.choices[1]) rather than through Struct's inner fields.
func valueProblem(m protoreflect.Message, depth int) (string, string) {
	if depth > maxValueDepth {
		return "", "must be nested at most " + strconv.Itoa(maxValueDepth) + " levels deep"
	}
	fields := m.Descriptor().Fields()
	switch m.Descriptor().FullName() {
	case "google.protobuf.Struct":
		var field, problem string
		m.Get(fields.ByName("fields")).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			key := k.String()
			if problem = textcheck.Problem(key); problem != "" {
				field, problem = "", "keys "+problem
				return false
			}
			if field, problem = valueProblem(v.Message(), depth+1); problem != "" {
				field = "." + key + field
			}
			return problem == ""
		})
		return field, problem
	case "google.protobuf.ListValue":
		l := m.Get(fields.ByName("values")).List()
		for i := range l.Len() {
			if f, p := valueProblem(l.Get(i).Message(), depth+1); p != "" {
				return index(i) + f, p
			}
		}
		return "", ""
	}
	// google.protobuf.Value: one of null, number, string, bool, struct, list.
	od := m.Descriptor().Oneofs().ByName("kind")
	fd := m.WhichOneof(od)
	if fd == nil {
		return "", ""
	}
	v := m.Get(fd)
	switch fd.Kind() {
	case protoreflect.MessageKind:
		return valueProblem(v.Message(), depth)
	default:
		return scalarProblem(fd, v, depth)
	}
}

// index is a list element's path: "[i]".
func index(i int) string {
	return "[" + strconv.Itoa(i) + "]"
}

// checkURL applies textcheck's rule to the path and query before the
// transcoder decodes them: it cannot represent invalid UTF-8 in a string
// field and would answer 500. Parameters with an empty name are dropped,
// like unknown ones.
func checkURL(next http.Handler, routes *routeIndex) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt := routes.match(r.Method, r.URL.Path)
		for i, seg := range strings.Split(r.URL.Path, "/") {
			if p := textcheck.Problem(seg); p != "" {
				field := "path"
				if name := rt.variable(i); name != "" {
					field = name
				}
				apihttp.WriteError(w, r, invalidField(field, p))
				return
			}
		}
		if r.URL.RawQuery == "" {
			next.ServeHTTP(w, r)
			return
		}
		query, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			apihttp.WriteError(w, r, apihttp.NewError(connect.CodeInvalidArgument, "INVALID_QUERY", "the query string is not valid URL encoding", "", nil))
			return
		}
		delete(query, "")
		for name, values := range query {
			if p := textcheck.Problem(name); p != "" {
				apihttp.WriteError(w, r, apihttp.NewError(connect.CodeInvalidArgument, "INVALID_QUERY", "query parameter names "+p, "", nil))
				return
			}
			for _, v := range values {
				if p := textcheck.Problem(v); p != "" {
					apihttp.WriteError(w, r, invalidField(rt.publicName(name), p))
					return
				}
			}
		}
		r.URL.RawQuery = query.Encode()
		next.ServeHTTP(w, r)
	})
}
