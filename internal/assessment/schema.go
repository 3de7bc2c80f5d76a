package assessment

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/assessd/assessd/internal/platform/errs"
)

// Bounds on customer JSON: a schema, a question's config.
const (
	maxSchemaBytes = 64 << 10
	maxConfigBytes = 64 << 10
	// maxSchemaNodes bounds the subschemas a schema applies with its
	// references followed: far more than a config needs, and no more than
	// 64 KiB holds without references (decision 0164).
	maxSchemaNodes = 10_000
	// maxValidationWork bounds a config's values times its schema's
	// subschemas: the validator may apply every subschema to every value,
	// each in under a microsecond: about 0.2 s at the bound (decision 0171).
	maxValidationWork = 250_000
)

// configSchema is a compiled config schema and the number of subschemas
// it applies with its references followed.
type configSchema struct {
	*jsonschema.Schema
	size int
}

// noLoader refuses every external reference: a customer's schema must not
// make the server read files or fetch URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not supported (%s)", url)
}

// compileSchema compiles a JSON Schema (draft 2020-12 unless the schema
// says otherwise). The error is fit for a 400.
func compileSchema(field string, schema map[string]any) (configSchema, error) {
	if schema == nil {
		return configSchema{}, errs.Invalid(field, "is required (a JSON Schema object)")
	}
	if b, _ := json.Marshal(schema); len(b) > maxSchemaBytes {
		return configSchema{}, errs.Invalid(field, "must be at most %d bytes of JSON", maxSchemaBytes)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const loc = "urn:assessd:config-schema"
	if err := c.AddResource(loc, normalize(schema)); err != nil {
		return configSchema{}, errs.Invalid(field, "is not a valid JSON Schema")
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return configSchema{}, errs.Invalid(field, "is not a valid JSON Schema: %s", schemaMessage(err))
	}
	n, err := expandedSize(sch, map[*jsonschema.Schema]int{})
	if err != nil {
		return configSchema{}, errs.Invalid(field, "%s", err.Error())
	}
	if n > maxSchemaNodes {
		return configSchema{}, errs.Invalid(field, "must apply at most %d subschemas with its references followed", maxSchemaNodes)
	}
	return configSchema{sch, n}, nil
}

// expandedSize counts the subschemas validation against s may apply: the
// validator follows a reference wherever it occurs, so a few bytes of
// references to references stand for exponentially many checks. Sizes are
// memoized per subschema (0 while counting) and stop growing past the
// bound. Recursion is refused: question configs do not need it, and it
// would have no size.
func expandedSize(s *jsonschema.Schema, sizes map[*jsonschema.Schema]int) (int, error) {
	if n, seen := sizes[s]; seen {
		if n == 0 {
			return 0, errors.New("must not refer to itself")
		}
		return n, nil
	}
	if s.DynamicRef != nil || s.RecursiveRef != nil {
		return 0, errors.New("must not use $dynamicRef or $recursiveRef")
	}
	sizes[s] = 0
	n := 1
	for _, sub := range subschemas(s) {
		m, err := expandedSize(sub, sizes)
		if err != nil {
			return 0, err
		}
		n = min(n+m, maxSchemaNodes+1)
	}
	sizes[s] = n
	return n, nil
}

// subschemas are the schemas s applies to an instance or to its parts: every
// field of jsonschema.Schema the validator descends into.
func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.Not, s.If, s.Then, s.Else, s.PropertyNames, s.UnevaluatedProperties,
		s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}
	out = slices.Concat(out, s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems, slices.Collect(maps.Values(s.Properties)),
		slices.Collect(maps.Values(s.PatternProperties)), slices.Collect(maps.Values(s.DependentSchemas)))
	// Fields that hold a schema or something else.
	for _, v := range append([]any{s.AdditionalProperties, s.Items, s.AdditionalItems}, slices.Collect(maps.Values(s.Dependencies))...) {
		switch v := v.(type) {
		case *jsonschema.Schema:
			out = append(out, v)
		case []*jsonschema.Schema:
			out = append(out, v...)
		}
	}
	return slices.DeleteFunc(out, func(s *jsonschema.Schema) bool { return s == nil })
}

// validateConfig checks a question's config against its type's schema and
// names the offending part ("config.options.0.text"). A config whose values
// times the schema's subschemas pass maxValidationWork is refused unread.
func validateConfig(sch configSchema, config map[string]any) error {
	if b, _ := json.Marshal(config); len(b) > maxConfigBytes {
		return errs.Invalid("config", "must be at most %d bytes of JSON", maxConfigBytes)
	}
	instance := normalize(config)
	if n := countValues(instance); n*sch.size > maxValidationWork {
		return errs.Invalid("config", "is too large for its question type's schema: %d values against %d subschemas, at most %d of the two multiplied",
			n, sch.size, maxValidationWork)
	}
	err := sch.Validate(instance)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return errs.Invalid("config", "does not match the question type's config schema")
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	field := strings.Join(append([]string{"config"}, leaf.InstanceLocation...), ".")
	return errs.Invalid(field, "%s", leaf.ErrorKind.LocalizedString(printer))
}

// countValues counts the JSON values in v: itself and every value inside.
func countValues(v any) int {
	n := 1
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			n += countValues(e)
		}
	case []any:
		for _, e := range v {
			n += countValues(e)
		}
	}
	return n
}

var printer = message.NewPrinter(language.English)

func schemaMessage(err error) string {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		leaf := ve
		for len(leaf.Causes) > 0 {
			leaf = leaf.Causes[0]
		}
		where := "/" + strings.Join(leaf.InstanceLocation, "/")
		return fmt.Sprintf("at %s: %s", where, leaf.ErrorKind.LocalizedString(printer))
	}
	var se *jsonschema.SchemaValidationError
	if errors.As(err, &se) {
		return schemaMessage(se.Err)
	}
	// Other compile errors (unsupported references, bad patterns) carry
	// only schema-local text.
	return err.Error()
}

// normalize round-trips v through JSON so numbers have the form the
// validator expects (json.Number) whatever built v.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		return v
	}
	return out
}
