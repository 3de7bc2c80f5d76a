package sweeps_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/openapi"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/race"
	"github.com/assessd/assessd/tenancy"
)

// hostileRounds is how many mutated requests each operation gets: 120, or
// a tenth with -short or the race detector, which multiplies a request's
// cost about threefold. `make test` runs this package once more without it,
// at full length (decision 0210). ASSESSD_HOSTILE_ROUNDS sets the rounds for
// a longer hunt (the seed stays fixed unless ASSESSD_HOSTILE_SEED is set).
func hostileRounds(t *testing.T) (rounds int, seed uint64) {
	rounds, seed = 120, 20261123
	if testing.Short() || race.Enabled {
		rounds = 12
	}
	if s := os.Getenv("ASSESSD_HOSTILE_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("ASSESSD_HOSTILE_ROUNDS=%q: want a positive number", s)
		}
		rounds = n
	}
	if s := os.Getenv("ASSESSD_HOSTILE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ASSESSD_HOSTILE_SEED=%q: want a number", s)
		}
		seed = n
	}
	return rounds, seed
}

// TestHostileInputOverOpenAPI sends seeded, mutated requests to every JSON
// operation the OpenAPI description publishes, as an owner: mutated bodies
// (type swaps, NUL and invalid UTF-8, huge numbers, deep nesting, unknown
// fields, truncated or empty JSON), mutated query parameters, malformed
// path ids and, on one request in four, an Idempotency-Key reused across
// requests or malformed. No answer may be a 5xx, and every error must have
// API.md's shape: code, message and an ErrorInfo with an UPPER_SNAKE
// reason, never naming internal (proto) identifiers.
func TestHostileInputOverOpenAPI(t *testing.T) {
	t.Parallel()
	rounds, seed := hostileRounds(t)
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	key := tn.Keys[tenancy.RoleOwner]
	fx := newHostileFixtures(e, tn, key)
	ops := openAPIOperations(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	check := newShapeChecker()

	var sent, fiveXX int
	var failures []string
	send := func(method, target string, body []byte, hasBody bool) {
		sent++
		var payload any
		if hasBody {
			payload = string(body)
		}
		r := e.DoWith(method, target, key, payload, hostileIdempotencyKey(rng))
		if r.Status >= 500 {
			fiveXX++
		}
		if problem := check.problem(r); problem != "" && len(failures) < 40 {
			failures = append(failures, fmt.Sprintf("%s %s body %.200q: %d %s: %s", method, target, body, r.Status, r.Raw, problem))
		}
	}

	for _, op := range ops {
		// Bodies: mutations of the documented example, on valid path ids
		// so the body reaches the domain.
		if op.body != nil && op.method != http.MethodDelete {
			for range rounds {
				body := mutateBody(rng, op.body)
				send(op.method, fx.path(rng, op, false), body, true)
			}
		}
		// Query parameters of reads.
		if len(op.query) > 0 {
			for range rounds {
				send(op.method, fx.path(rng, op, false)+mutateQuery(rng, op.query), nil, false)
			}
		}
		// Malformed ids in every path variable.
		if len(op.pathVars) > 0 {
			for range max(rounds/4, len(malformedIDs)) {
				var body []byte
				if op.body != nil {
					body, _ = json.Marshal(op.body)
				}
				send(op.method, fx.path(rng, op, true), body, op.body != nil)
			}
		}
	}
	t.Logf("hostile input: %d operations, %d requests, %d answered 5xx (seed %d)", len(ops), sent, fiveXX, seed)
	for _, f := range failures {
		t.Error(f)
	}
	if len(ops) < 25 || sent < 1000 {
		t.Fatalf("only %d operations and %d requests: is the OpenAPI description read?", len(ops), sent)
	}
}

// hostileIdempotencyKey is, for one request in four, an Idempotency-Key
// header: one of a few reused keys (so bodies and paths collide on them),
// or a malformed one.
func hostileIdempotencyKey(rng *rand.Rand) http.Header {
	keys := []string{"k1", "k2", "k3", "", strings.Repeat("k", 256), "caf\u00e9", "tab\tkey", "k1 "}
	if rng.IntN(4) > 0 {
		return nil
	}
	return http.Header{"Idempotency-Key": {pick(rng, keys)}}
}

// apiOperation is one JSON operation of the OpenAPI description.
type apiOperation struct {
	method, template string
	pathVars         []string
	query            []queryParam
	body             any // the documented example body; nil without a body
}

type queryParam struct {
	name, typ, format string
}

// openAPIOperations reads the operations of the served OpenAPI document,
// leaving out the OAuth endpoints (RFC 6749 bodies, form encoded).
func openAPIOperations(t *testing.T) []apiOperation {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				In, Name string
				Schema   struct{ Type, Format string }
			}
			RequestBody struct {
				Content map[string]struct {
					Example any
				}
			} `yaml:"requestBody"`
		}
	}
	if err := yaml.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []apiOperation
	for path, methods := range doc.Paths {
		if strings.HasPrefix(path, "/oauth/") {
			continue
		}
		for method, o := range methods {
			op := apiOperation{method: strings.ToUpper(method), template: path}
			for _, p := range o.Parameters {
				switch p.In {
				case "path":
					op.pathVars = append(op.pathVars, p.Name)
				case "query":
					op.query = append(op.query, queryParam{p.Name, p.Schema.Type, p.Schema.Format})
				}
			}
			if c, ok := o.RequestBody.Content["application/json"]; ok {
				op.body = c.Example
				if op.body == nil {
					op.body = map[string]any{}
				}
			}
			ops = append(ops, op)
		}
	}
	// Deterministic order, so a seed reproduces a run.
	sort.Slice(ops, func(i, j int) bool {
		return ops[i].template+" "+ops[i].method < ops[j].template+" "+ops[j].method
	})
	return ops
}

// hostileFixtures are real resources whose ids fill path variables.
type hostileFixtures struct {
	byCollection map[string]string // "exams" -> an exam id
}

func newHostileFixtures(e *apptest.Env, tn apptest.Tenant, key string) hostileFixtures {
	folder := e.Do("POST", "/folders", key, map[string]any{"name": "Fuzz"}).Must(e.T, 200).Body
	exam := e.Do("POST", "/exams", key, map[string]any{"name": "Fuzz", "language": "en"}).Must(e.T, 200).Body
	examID := exam["id"].(string)
	q := e.Do("POST", "/exams/"+examID+"/questions", key, map[string]any{
		"type": "numeric", "prompt": "1+1?", "config": map[string]any{"correct": 2},
	}).Must(e.T, 200).Body
	class := apptest.Str(e.Do("POST", "/classes", key, map[string]any{"name": "Fuzz"}).Must(e.T, 200).Body, "id")
	e.Do("POST", "/classes/"+class+"/members", key, map[string]any{"userId": tn.Users[tenancy.RoleStudent].ID, "role": "student"}).Must(e.T, 200)
	return hostileFixtures{byCollection: map[string]string{
		"folders":          folder["id"].(string),
		"exams":            examID,
		"questions":        q["id"].(string),
		"users":            tn.Users[tenancy.RoleStudent].ID,
		"question-types":   "numeric",
		"results":          "res_01JD3M4Q9ZB8K1T7W2X5C6V0NA",
		"exam-generations": "gen_01JD3M4Q9ZB8K1T7W2X5C6V0NA",
		"classes":          class,
		"members":          tn.Users[tenancy.RoleStudent].ID,
	}}
}

// malformedIDs are path values that are no id of any resource.
var malformedIDs = []string{
	"x", "exm_", "exm_!!!!", "exm_01ARZ3NDEKTSV4RRFFQ69G5FA", "exm_01ARZ3NDEKTSV4RRFFQ69G5FAVX",
	"exm_01arz3ndektsv4rrffq69g5fav", "qst_01ARZ3NDEKTSV4RRFFQ69G5FAV", "usr_ZZZZZZZZZZZZZZZZZZZZZZZZZZ",
	"%00", "exm_%00", "%FF", "%C3%28", "%ED%A0%80", "..", "%2F", "%20", "%E2%80%AE", "%F0%9F%98%80",
	"1", "-1", "null", "true", "%7B%7D", "'%20OR%201=1--",
}

// path fills the template's variables: a fixture id, or with malformed
// set one variable gets a malformed id.
func (f hostileFixtures) path(rng *rand.Rand, op apiOperation, malformed bool) string {
	bad := -1
	if malformed {
		bad = rng.IntN(len(op.pathVars))
	}
	segments := strings.Split(op.template, "/")
	v := 0
	for i, s := range segments {
		if !strings.HasPrefix(s, "{") {
			continue
		}
		if v == bad {
			segments[i] = pick(rng, malformedIDs)
			if rng.IntN(8) == 0 {
				segments[i] = strings.Repeat("A", 1+rng.IntN(3000))
			}
		} else {
			segments[i] = url.PathEscape(f.byCollection[segments[i-1]])
		}
		v++
	}
	return strings.Join(segments, "/")
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// hostileStrings are values for any string field.
var hostileStrings = []string{
	"", " ", "a\x00b", "\x00", "nul\x00", "\u202e", "\uffff", "😀", "\ttab\r\n", "'; DROP TABLE users; --",
	"exm_01ARZ3NDEKTSV4RRFFQ69G5FAV", "usr_01ARZ3NDEKTSV4RRFFQ69G5FAV", "qst_01ARZ3NDEKTSV4RRFFQ69G5FAV",
	"eu", "global", "owner", "student", "numeric", "multiple_choice", "en", "xx-YY-zz", "https://example.com/x",
}

// hostileLengths are boundary string lengths around the API's limits.
var hostileLengths = []int{199, 200, 201, 255, 256, 1000, 1001, 10000, 10001, 65536, 300000}

// invalidUTF8 are byte sequences that are not UTF-8.
var invalidUTF8 = []string{"\xff", "\xc3\x28", "\xed\xa0\x80", "\xf0\x28\x8c\x28", "\xfe\xfe\xff\xff", "a\x80b"}

// mutateBody returns a hostile variant of the example body: a value
// mutation of its JSON tree, or a mutation of its bytes.
func mutateBody(rng *rand.Rand, example any) []byte {
	tree := cloneJSON(example)
	const placeholder = "\ue000PLACEHOLDER\ue000"
	switch rng.IntN(10) {
	case 0: // raw documents
		return []byte(pick(rng, []string{
			"", " ", "null", "[]", "{}", `"x"`, "0", "true", "{", "}", "[{}]", `{"a":}`, `{"a"`,
			`{"a":1,}`, "\xef\xbb\xbf{}", `{"x":1e99999}`, strings.Repeat("[", 100000), strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000),
			"\x00", "{\x00}", `{"\u0000":1}`, "NaN", `{"name":"\ud800"}`, `{"name":"\udfff\ud800"}`,
		}))
	case 1: // truncated JSON
		b, _ := json.Marshal(tree)
		return b[:rng.IntN(len(b)+1)]
	case 2: // invalid UTF-8 inside a string value or key
		tree = setRandom(rng, tree, placeholder)
		b, _ := json.Marshal(tree)
		return bytes.Replace(b, []byte(placeholder), []byte(pick(rng, invalidUTF8)), 1)
	case 3: // a flipped byte
		b, _ := json.Marshal(tree)
		if len(b) > 0 {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		return b
	case 4: // odd number literals
		tree = setRandom(rng, tree, placeholder)
		b, _ := json.Marshal(tree)
		lit := pick(rng, []string{"1e400", "-1e400", "1e308", "9007199254740993", "18446744073709551616", "-0", "1.0000000000000000001", "0.1e-400", `"NaN"`, `"Infinity"`, `"-Infinity"`, "2147483648", "-2147483649", "4294967296"})
		return bytes.Replace(b, []byte(`"`+placeholder+`"`), []byte(lit), 1)
	case 5: // an unknown field
		if m, ok := tree.(map[string]any); ok {
			m[pick(rng, []string{"unknown", "zz", "id", "orgId", "@type", "\x00", "createdAt", "position"})] = 1
		}
	case 6: // a removed field
		if m, ok := tree.(map[string]any); ok && len(m) > 0 {
			keys := sortedKeys(m)
			delete(m, pick(rng, keys))
		}
	default: // a replaced value somewhere in the tree
		tree = setRandom(rng, tree, hostileValue(rng))
	}
	b, _ := json.Marshal(tree) // a tree of JSON values always marshals
	return b
}

// hostileValue is a replacement for any JSON value.
func hostileValue(rng *rand.Rand) any {
	switch rng.IntN(9) {
	case 0:
		return pick(rng, hostileStrings)
	case 1:
		return strings.Repeat(pick(rng, []string{"x", "é", "😀"}), pick(rng, hostileLengths))
	case 2:
		return pick(rng, []any{0, -1, 1, 1.5, 1e308, -1e308, 2147483648, 1e15, 201, 200})
	case 3:
		return pick(rng, []any{true, false, nil})
	case 4:
		return pick(rng, []any{[]any{}, []any{nil}, []any{"a\x00"}, []any{map[string]any{}}, []any{1, "x"}})
	case 5:
		return pick(rng, []any{map[string]any{}, map[string]any{"a\x00": 1}, map[string]any{"": ""}, map[string]any{"k": "v\x00"}})
	case 6: // deep nesting
		var v any = "leaf"
		for range pick(rng, []int{10, 32, 33, 64, 100, 1000}) {
			if rng.IntN(2) == 0 {
				v = []any{v}
			} else {
				v = map[string]any{"a": v}
			}
		}
		return v
	case 7: // many keys
		m := map[string]any{}
		for i := range pick(rng, []int{51, 101, 1001}) {
			m["k"+strconv.Itoa(i)] = i
		}
		return m
	default:
		return map[string]any{"\x00key": "v", strings.Repeat("k", 300): "v", "k": strings.Repeat("v", 5000)}
	}
}

// setRandom replaces a random node of tree (possibly the root) with v.
func setRandom(rng *rand.Rand, tree any, v any) any {
	var nodes []func(any)
	var walk func(node any)
	walk = func(node any) {
		switch n := node.(type) {
		case map[string]any:
			for _, k := range sortedKeys(n) {
				nodes = append(nodes, func(v any) { n[k] = v })
				walk(n[k])
			}
		case []any:
			for i := range n {
				nodes = append(nodes, func(v any) { n[i] = v })
				walk(n[i])
			}
		}
	}
	walk(tree)
	if len(nodes) == 0 || rng.IntN(10) == 0 {
		return v
	}
	pick(rng, nodes)(v)
	return tree
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func cloneJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// mutateQuery returns a query string with hostile values for some of the
// operation's parameters (and now and then an unknown one).
func mutateQuery(rng *rand.Rand, params []queryParam) string {
	var parts []string
	for _, p := range params {
		if rng.IntN(2) == 0 {
			continue
		}
		parts = append(parts, url.QueryEscape(p.name)+"="+url.QueryEscape(hostileQueryValue(rng, p)))
		if rng.IntN(10) == 0 { // repeated
			parts = append(parts, url.QueryEscape(p.name)+"="+url.QueryEscape(hostileQueryValue(rng, p)))
		}
	}
	if rng.IntN(6) == 0 {
		parts = append(parts, pick(rng, []string{"unknown=1", "page_size=5", "%FF=1", "a%00=1", "pageSize", "=", "&&", "%zz=1"}))
	}
	if len(parts) == 0 {
		return ""
	}
	return "?" + strings.Join(parts, "&")
}

func hostileQueryValue(rng *rand.Rand, p queryParam) string {
	if rng.IntN(4) == 0 {
		return pick(rng, []string{"", "\x00", "a\x00b", pick(rng, invalidUTF8), strings.Repeat("x", 5000), "%", "\u202e"})
	}
	switch {
	case p.name == "pageSize" || p.typ == "integer":
		return pick(rng, []string{"-1", "0", "1", "200", "201", "99999999999", "abc", "1.5", "1e3", "0x10", " 5", "+5", "-2147483649"})
	case p.name == "pageToken":
		raw := pick(rng, []string{"v1:", "v1:\x00", "v1:exm_01ARZ3NDEKTSV4RRFFQ69G5FAV", "v1:" + pick(rng, invalidUTF8), "v2:x", "v1:" + strings.Repeat("z", 500)})
		return pick(rng, []string{base64.RawURLEncoding.EncodeToString([]byte(raw)), "!!!", "====", "djE6"})
	case p.format == "date-time":
		return pick(rng, []string{"yesterday", "2026-13-01T00:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
			"10000-01-01T00:00:00Z", "2026-01-01", "1e10", "2026-01-01T00:00:00+25:00", "2026-02-30T00:00:00Z", "0001-01-01T00:00:00Z"})
	default:
		return pick(rng, hostileStrings)
	}
}

// shapeChecker judges one answer against API.md's error contract.
type shapeChecker struct {
	// internalName matches a proto field name that differs from its
	// public JSON name.
	internalName *regexp.Regexp
}

var upperSnake = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func newShapeChecker() shapeChecker {
	var names []string
	protoregistry.GlobalFiles.RangeFilesByPackage(v1.File_assessd_v1_users_proto.Package(), func(f protoreflect.FileDescriptor) bool {
		for i := range f.Messages().Len() {
			fields := f.Messages().Get(i).Fields()
			for j := range fields.Len() {
				if fd := fields.Get(j); string(fd.Name()) != fd.JSONName() {
					names = append(names, regexp.QuoteMeta(string(fd.Name())))
				}
			}
		}
		return true
	})
	return shapeChecker{internalName: regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)}
}

// problem returns what is wrong with r, or "".
func (c shapeChecker) problem(r apptest.Response) string {
	if r.Status >= 500 {
		return "a 5xx"
	}
	if r.Status < 400 {
		return ""
	}
	code, _ := r.Body["code"].(float64)
	msg, _ := r.Body["message"].(string)
	if code == 0 || msg == "" {
		return "no code or message"
	}
	if r.Reason() == "" || !upperSnake.MatchString(r.Reason()) {
		return "no ErrorInfo with an UPPER_SNAKE reason"
	}
	public := msg + " " + r.Field()
	for _, leak := range []string{"assessd.v1", "google.protobuf", "proto:", "protojson", "pgx", "SQLSTATE", "vanguard"} {
		if strings.Contains(public, leak) {
			return "leaks " + leak
		}
	}
	if name := c.internalName.FindString(public); name != "" {
		return "names the internal field " + name
	}
	if r.Status == http.StatusBadRequest && r.Reason() == "INVALID_ARGUMENT" && r.Field() == "" {
		return "an INVALID_ARGUMENT without a field violation"
	}
	if bytes.Contains(r.Raw, []byte(`"localizedMessage"`)) || bytes.Contains(r.Raw, []byte(`"reason":""`)) {
		return "empty error detail fields"
	}
	return ""
}
