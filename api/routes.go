package api

import (
	"strings"
	"sync"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/reflect/protoreflect"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/internal/platform/textcheck"
)

// apiRoutes is the route index of the API's package, built once.
var apiRoutes = sync.OnceValue(func() *routeIndex {
	return newRouteIndex(v1.File_assessd_v1_users_proto.Package())
})

// FieldOf names the request field of a REST route's path or query
// parameter (apihttp.FieldOf), from the API's google.api.http rules: the
// middleware shapes the transcoder's errors about undecodable values with
// it.
func FieldOf(method, path, param string) (string, protoreflect.FieldDescriptor) {
	rt := apiRoutes().match(method, path)
	return rt.publicName(param), rt.field(param)
}

// routeIndex finds the REST route of a request by its literal path
// segments, so errors about path and query values can name the public
// field they concern.
type routeIndex struct {
	routes []*route
}

// route is one google.api.http rule.
type route struct {
	method   string
	segments []string // the template split at "/", variables as "{name}"
	input    protoreflect.MessageDescriptor
}

func newRouteIndex(pkg protoreflect.FullName) *routeIndex {
	idx := &routeIndex{}
	forEachRule(pkg, func(m protoreflect.MethodDescriptor, rule *annotations.HttpRule) {
		method, path := HTTPPattern(rule)
		idx.routes = append(idx.routes, &route{method: method, segments: strings.Split(path, "/"), input: m.Input()})
	})
	return idx
}

// match returns the route of method and path, or nil.
func (idx *routeIndex) match(method, path string) *route {
	segments := strings.Split(path, "/")
	for _, rt := range idx.routes {
		if rt.method == method && rt.matches(segments) {
			return rt
		}
	}
	return nil
}

func (rt *route) matches(segments []string) bool {
	if len(segments) != len(rt.segments) {
		return false
	}
	for i, s := range rt.segments {
		if !isVariable(s) && s != segments[i] {
			return false
		}
	}
	return true
}

func isVariable(segment string) bool { return strings.HasPrefix(segment, "{") }

// variable returns the public name of the path variable at segment i, or
// "" when there is none.
func (rt *route) variable(i int) string {
	if rt == nil || i >= len(rt.segments) || !isVariable(rt.segments[i]) {
		return ""
	}
	return rt.publicName(strings.Trim(rt.segments[i], "{}"))
}

// publicName turns a request field path as the transcoder or a client
// spells it ("page_size", "pageSize", "filter.actor_id") into its public
// lowerCamelCase form. Names the request does not have are returned
// sanitized, as the client sent them.
func (rt *route) publicName(name string) string {
	field := rt.field(name)
	if field == nil {
		return textcheck.Sanitize(name, 64)
	}
	parts := strings.Split(name, ".")
	md := rt.input
	for i, p := range parts {
		fd := lookupField(md, p)
		parts[i] = fd.JSONName()
		md = fd.Message()
	}
	return strings.Join(parts, ".")
}

// field returns the descriptor a field path names, or nil.
func (rt *route) field(name string) protoreflect.FieldDescriptor {
	if rt == nil {
		return nil
	}
	md := rt.input
	var fd protoreflect.FieldDescriptor
	for _, p := range strings.Split(name, ".") {
		if md == nil {
			return nil
		}
		if fd = lookupField(md, p); fd == nil {
			return nil
		}
		md = fd.Message()
	}
	return fd
}

func lookupField(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByName(protoreflect.Name(name)); fd != nil {
		return fd
	}
	return md.Fields().ByJSONName(name)
}
