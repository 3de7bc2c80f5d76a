package embedflow

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// A configField is one input of a question's configuration form, built
// from the question type's JSON Schema. Name is the path the API names in
// its errors (config.options.0.text), so a refused save puts the API
// validator's message beside the input it concerns.
type configField struct {
	Name, Label, Hint string
	// Kind is bool (checkbox), choice (a required boolean: true/false),
	// number, integer, text, textarea, lines (a list of strings, one per
	// line), rows (a list of objects) or hidden.
	Kind     string
	Value    string
	Checked  bool
	Required bool
	Error    string
	// Rows are a rows field's sub-fields: one entry per item plus blank
	// ones to add items.
	Rows [][]configField
}

// blankRows are the empty items a rows field offers for adding.
const blankRows = 2

// Bounds of the structured editor, past which a configuration is edited as
// JSON: rows fields nested at most two deep, and 500 fields. Every row
// repeats its item's fields, nested rows included, so a form grows as a
// power of its nesting: a schema within the API's limits (54 KB, JSON
// depth 30) made millions of fields and took 5 s to build.
const (
	maxRowsDepth  = 2
	maxFormFields = 500
)

// configForm builds the form fields of schema filled with config; false
// when the schema has a shape the form cannot express or the form would
// pass the bounds above (then only the raw JSON editor is offered). The
// build stops as soon as it passes them.
func configForm(schema, config map[string]any, errField, errMsg string) ([]configField, bool) {
	b := formBuild{errField: errField, errMsg: errMsg, left: maxFormFields}
	return b.object(schema, config, "config", 0)
}

// formBuild is one build of a configuration form: a refused save's field
// and message, to show beside its input, and how many more fields the form
// may have.
type formBuild struct {
	errField, errMsg string
	left             int
}

// object builds the fields of an object of schema named under prefix,
// inside depth rows fields.
func (b *formBuild) object(schema, config map[string]any, prefix string, depth int) ([]configField, bool) {
	props, _ := schema["properties"].(map[string]any)
	if schema["type"] != "object" || len(props) == 0 {
		return nil, false
	}
	var out []configField
	for _, name := range propertyOrder(schema) {
		f, ok := b.field(prefix+"."+name, name, asMap(props[name]), isRequired(schema, name), config[name], depth)
		if !ok {
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}

func (b *formBuild) field(path, name string, sch map[string]any, required bool, value any, depth int) (configField, bool) {
	if b.left--; b.left < 0 {
		return configField{}, false
	}
	f := configField{Name: path, Label: label(sch, name), Required: required}
	f.Hint, _ = sch["description"].(string)
	if b.errField == path || strings.HasPrefix(b.errField, path+".") {
		f.Error = b.errMsg
	}
	switch sch["type"] {
	case "boolean":
		f.Kind = "bool"
		if required {
			f.Kind = "choice"
		}
		f.Checked, _ = value.(bool)
		f.Value = strconv.FormatBool(f.Checked)
	case "number", "integer":
		f.Kind = sch["type"].(string)
		if value != nil {
			f.Value = fmt.Sprint(value)
		}
	case "string":
		f.Kind = "text"
		if n, _ := sch["maxLength"].(float64); n > 1000 || sch["maxLength"] == nil {
			f.Kind = "textarea"
		}
		if name == "id" {
			f.Kind = "hidden"
		}
		f.Value, _ = value.(string)
	case "array":
		items := asMap(sch["items"])
		list, _ := value.([]any)
		switch items["type"] {
		case "string", "number":
			f.Kind = "lines"
			lines := make([]string, len(list))
			for i, v := range list {
				lines[i] = fmt.Sprint(v)
			}
			f.Value = strings.Join(lines, "\n")
		case "object":
			// rowNumbers reads a rows field's name up to its first dot.
			if depth == maxRowsDepth || strings.Contains(name, ".") {
				return f, false
			}
			f.Kind = "rows"
			for i := range len(list) + blankRows {
				var item map[string]any
				if i < len(list) {
					item = asMap(list[i])
				}
				row, ok := b.object(items, item, path+"."+strconv.Itoa(i), depth+1)
				if !ok {
					return f, false
				}
				f.Rows = append(f.Rows, row)
			}
			if f.Error != "" && b.errField != path {
				f.Error = "" // shown beside the row's input
			}
		default:
			return f, false
		}
	default:
		return f, false
	}
	return f, true
}

// parseConfigForm reads a configuration back from a form built by
// configForm. Values keep the type the form gives them when they do not
// parse (a number field holding "abc" stays a string), so the API's
// validator, not this reader, says what is wrong.
func parseConfigForm(schema map[string]any, form url.Values, prefix string) map[string]any {
	return postedConfig{form: form, rows: rowNumbers(schema, form, prefix)}.object(schema, prefix)
}

// postedConfig is a posted configuration form with the row numbers its
// field names hold, indexed once: a form can name thousands of rows (the
// schema's maxItems refuses them only after they were read), and reading
// it must stay linear in its size.
type postedConfig struct {
	form url.Values
	// rows holds the row numbers named under each path:
	// "config.options.3.text" puts 3 under "config.options".
	rows map[string]map[int]bool
}

// object reads the object of schema whose fields are under prefix.
func (p postedConfig) object(schema map[string]any, prefix string) map[string]any {
	form := p.form
	props, _ := schema["properties"].(map[string]any)
	out := map[string]any{}
	for name, raw := range props {
		sch, path := asMap(raw), prefix+"."+name
		required := isRequired(schema, name)
		switch sch["type"] {
		case "boolean":
			v := form.Get(path)
			if v == "true" || v == "on" {
				out[name] = true
			} else if required {
				out[name] = false
			}
		case "number", "integer":
			v := strings.TrimSpace(form.Get(path))
			if v == "" {
				continue
			}
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				out[name] = n
			} else {
				out[name] = v
			}
		case "string":
			if v := form.Get(path); v != "" || (required && form.Has(path)) {
				out[name] = v
			}
		case "array":
			items := asMap(sch["items"])
			list := []any{}
			switch items["type"] {
			case "string", "number":
				for line := range strings.Lines(form.Get(path)) {
					if line = strings.TrimSpace(line); line != "" {
						list = append(list, line)
					}
				}
				if items["type"] == "number" {
					for i, v := range list {
						if n, err := strconv.ParseFloat(v.(string), 64); err == nil {
							list[i] = n
						}
					}
				}
			case "object":
				list = p.list(items, path)
			}
			if len(list) > 0 || required {
				out[name] = list
			}
		}
	}
	return out
}

// list reads a rows field: rows left empty are dropped (that is how an
// item is removed), and an item without an id gets the first free one.
// Rows are numbered from 0 and end at the first missing number.
func (p postedConfig) list(items map[string]any, path string) []any {
	var list []any
	taken := map[string]bool{}
	for i := 0; p.rows[path][i]; i++ {
		item := p.object(items, path+"."+strconv.Itoa(i))
		id, _ := item["id"].(string)
		delete(item, "id")
		if empty(item) {
			continue
		}
		if id != "" {
			item["id"], taken[id] = id, true
		}
		list = append(list, item)
	}
	if _, hasID := asMap(items["properties"])["id"]; hasID {
		next := 1
		for _, it := range list {
			item := it.(map[string]any)
			if item["id"] != nil {
				continue
			}
			for taken["o"+strconv.Itoa(next)] {
				next++
			}
			id := "o" + strconv.Itoa(next)
			item["id"], taken[id] = id, true
		}
	}
	return list
}

// rowNumbers indexes the row numbers the form's field names hold for the
// rows fields of schema, by the field's path, as the page writes them:
// decimal, without a sign or leading zeros, and followed by a field name.
// Each name is read once along the schema, which knows where a rows field
// is: indexing the path before every number in a name cost its length
// squared.
func rowNumbers(schema map[string]any, form url.Values, prefix string) map[string]map[int]bool {
	rows := map[string]map[int]bool{}
	for k := range form {
		rest, ok := strings.CutPrefix(k, prefix+".")
		for sch := schema; ok; {
			var name, number string
			name, rest, _ = strings.Cut(rest, ".")
			field := asMap(asMap(sch["properties"])[name])
			sch = asMap(field["items"])
			number, rest, ok = strings.Cut(rest, ".")
			n, err := strconv.Atoi(number)
			if !ok || field["type"] != "array" || sch["type"] != "object" || err != nil || n < 0 || strconv.Itoa(n) != number {
				break
			}
			path := k[:len(k)-len(rest)-len(number)-2]
			if rows[path] == nil {
				rows[path] = map[int]bool{}
			}
			rows[path][n] = true
		}
	}
	return rows
}

// empty reports an item with nothing filled in (false booleans and empty
// strings count as nothing).
func empty(item map[string]any) bool {
	for _, v := range item {
		if v != false && v != "" {
			return false
		}
	}
	return true
}

// propertyOrder lists the schema's properties: required ones first, then
// the others, each group by name.
func propertyOrder(schema map[string]any) []string {
	var names []string
	for name := range asMap(schema["properties"]) {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		ra, rb := isRequired(schema, a), isRequired(schema, b)
		if ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

func isRequired(schema map[string]any, name string) bool {
	req, _ := schema["required"].([]any)
	return slices.Contains(req, any(name))
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// label is the schema's title, or the property name in words
// (acceptedAnswers → Accepted answers).
func label(sch map[string]any, name string) string {
	if t, ok := sch["title"].(string); ok && t != "" {
		return t
	}
	var b strings.Builder
	for i, r := range name {
		switch {
		case i == 0:
			b.WriteRune(unicode.ToUpper(r))
		case unicode.IsUpper(r):
			b.WriteRune(' ')
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
