// Command openapigen finishes the OpenAPI description buf generates from
// the protos: operation ids named like the SDK's methods, each operation's
// scope, roles and security requirement (from the assessd.v1.access method
// option), the error responses of API.md, readable time parameters, and the
// OAuth endpoints, which are not protos (an overlay file). make generate
// runs it:
//
//	openapigen api/openapi/openapi.yaml api/openapi/oauth.yaml api/openapi/examples.yaml
package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: openapigen OPENAPI.yaml OVERLAY.yaml EXAMPLES.yaml")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

type object = map[string]any

func load(path string) (object, error) {
	data, err := os.ReadFile(path) //nolint:gosec // G304: the files named on the command line (make generate)
	if err != nil {
		return nil, err
	}
	var doc object
	return doc, yaml.Unmarshal(data, &doc)
}

func run(docPath, overlayPath, examplesPath string) error {
	doc, err := load(docPath)
	if err != nil {
		return err
	}
	overlay, err := load(overlayPath)
	if err != nil {
		return err
	}
	examples, err := load(examplesPath)
	if err != nil {
		return err
	}
	paths := doc["paths"].(object)
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		for method, op := range paths[path].(object) {
			if err := finishOperation(method, op.(object)); err != nil {
				return fmt.Errorf("%s %s: %w", method, path, err)
			}
			if err := addExamples(op.(object), examples["operations"].(object)); err != nil {
				return fmt.Errorf("%s %s: %w", method, path, err)
			}
		}
	}
	camelPaths(paths)
	maps.Copy(paths, overlay["paths"].(object))
	doc["tags"] = append(asList(doc["tags"]), asList(overlay["tags"])...)
	components := doc["components"].(object)
	for _, section := range []string{"headers", "parameters", "responses", "schemas"} {
		dst, _ := components[section].(object)
		if dst == nil {
			dst = object{}
			components[section] = dst
		}
		if src, ok := overlay["components"].(object)[section].(object); ok {
			maps.Copy(dst, src)
		}
	}
	return write(docPath, doc)
}

// finishOperation renames the operation, documents its access rule and
// adds the error responses.
func finishOperation(method string, op object) error {
	full, _ := op["operationId"].(string)
	desc, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(full))
	if err != nil {
		return fmt.Errorf("operation %q has no protobuf method: %w", full, err)
	}
	m := desc.(protoreflect.MethodDescriptor)
	name := string(m.Name())
	op["operationId"] = strings.ToLower(name[:1]) + name[1:]
	description, _ := op["description"].(string)
	if first, _, ok := strings.Cut(description, ". "); ok {
		op["summary"] = first + "."
	} else if description != "" {
		op["summary"] = description
	}
	// app's TestEveryMethodDocumentsItsAccess fails for a method without it.
	if access, ok := proto.GetExtension(m.Options(), v1.E_Access).(*v1.Access); ok && access != nil && access.Scope != "" {
		op["description"] = strings.TrimSpace(description + "\n\n" + accessText(access))
		op["security"] = []any{object{"bearer": []any{access.Scope}}, object{"oauth2": []any{access.Scope}}}
	}
	responses := op["responses"].(object)
	delete(responses, "default")
	if ok, _ := responses["200"].(object); ok != nil && op["security"] != nil {
		// Authenticated calls count against the organization's quota.
		ok["headers"] = object{
			"RateLimit-Policy": object{"$ref": "#/components/headers/RateLimit-Policy"},
			"RateLimit":        object{"$ref": "#/components/headers/RateLimit"},
		}
		if method == "post" || method == "put" || method == "patch" {
			// Authenticated writes run once per Idempotency-Key.
			op["parameters"] = append(asList(op["parameters"]), object{"$ref": "#/components/parameters/Idempotency-Key"})
			ok["headers"].(object)["Idempotent-Replayed"] = object{"$ref": "#/components/headers/Idempotent-Replayed"}
			responses["422"] = object{"$ref": "#/components/responses/IdempotencyKeyReused"}
		}
	}
	for code, ref := range errorResponses(method) {
		responses[code] = object{"$ref": "#/components/responses/" + ref}
	}
	// A query parameter of a well-known type gets that type's long
	// comment; the operation describes what the parameter does.
	for _, p := range asList(op["parameters"]) {
		param := p.(object)
		d, _ := param["description"].(string)
		switch {
		case strings.HasPrefix(d, "A Timestamp represents"):
			param["description"] = "An RFC 3339 time, e.g. 2026-01-31T12:00:00Z."
		case strings.HasPrefix(d, "A Duration represents"):
			param["description"] = "A duration in seconds with the suffix s, e.g. 20s or 1.5s."
		}
	}
	return nil
}

// addExamples sets the operation's request and success examples from the
// examples file; every operation must have them. An entry's
// responseContent replaces the success response's media types (a PDF
// download) and its requestContent adds media types to the request body
// (a multipart upload the server takes besides JSON).
func addExamples(op, examples object) error {
	id := op["operationId"].(string)
	ex, ok := examples[id].(object)
	if !ok {
		return fmt.Errorf("no examples for %s in the examples file", id)
	}
	if content, ok := ex["responseContent"].(object); ok {
		op["responses"].(object)["200"].(object)["content"] = content
	}
	if content, ok := ex["requestContent"].(object); ok {
		body, _ := op["requestBody"].(object)
		media, _ := body["content"].(object)
		if media == nil {
			return fmt.Errorf("%s has requestContent but no request body", id)
		}
		maps.Copy(media, content)
	}
	if req, ok := ex["request"]; ok {
		if media, ok := jsonMedia(op["requestBody"]); ok {
			media["example"] = req
		}
	}
	if res, ok := op["responses"].(object)["200"]; ok {
		if media, ok := jsonMedia(res); ok {
			media["example"] = ex["response"]
		}
	}
	return nil
}

// jsonMedia returns the application/json media object of a request body or
// response.
func jsonMedia(v any) (object, bool) {
	o, _ := v.(object)
	content, _ := o["content"].(object)
	media, ok := content["application/json"].(object)
	return media, ok
}

var pathVariable = regexp.MustCompile(`\{([a-z0-9_]+)\}`)

// camelPaths names path variables in lowerCamelCase ({exam_id} becomes
// {examId}), like every JSON field of the API; the URLs are unchanged.
func camelPaths(paths object) {
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		camel := pathVariable.ReplaceAllStringFunc(path, func(v string) string { return "{" + lowerCamel(v[1:len(v)-1]) + "}" })
		item := paths[path]
		delete(paths, path)
		paths[camel] = item
		for _, op := range item.(object) {
			for _, p := range asList(op.(object)["parameters"]) {
				if param := p.(object); param["in"] == "path" {
					param["name"] = lowerCamel(param["name"].(string))
				}
			}
		}
	}
}

func lowerCamel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func accessText(a *v1.Access) string {
	s := "Requires scope `" + a.Scope + "`"
	if len(a.Roles) > 0 {
		s += " and one of the roles " + strings.Join(a.Roles, ", ")
	}
	if len(a.CallerKinds) > 0 {
		s += "; only " + strings.Join(a.CallerKinds, ", ") + " callers"
	}
	return s + "."
}

func errorResponses(method string) map[string]string {
	r := map[string]string{"400": "BadRequest", "401": "Unauthenticated", "403": "PermissionDenied",
		"404": "NotFound", "429": "RateLimited", "503": "Unavailable"}
	if method == "post" || method == "put" || method == "patch" {
		r["409"] = "Conflict"
		r["413"] = "TooLarge"
	}
	return r
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// write encodes doc with its top-level sections in the conventional order.
func write(path string, doc object) error {
	root := &yaml.Node{Kind: yaml.MappingNode}
	for _, key := range []string{"openapi", "info", "servers", "security", "tags", "paths", "components"} {
		v, ok := doc[key]
		if !ok {
			continue
		}
		var value yaml.Node
		if err := value.Encode(v); err != nil {
			return err
		}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &value)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644) //nolint:gosec // G306: a committed source file, readable by all
}
