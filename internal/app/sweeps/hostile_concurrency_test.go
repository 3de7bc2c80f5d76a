package sweeps_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// TestConcurrentWritesOverSharedRows lets several clients of one school
// create, move, edit and delete the same folders, exams, questions, users,
// results and classes at once, each naming rows another may be deleting at that
// moment, while a vendor publishes, edits and deprecates question types
// the school enables, disables and writes questions of; one write in four
// carries one of a few Idempotency-Keys the clients share. Every answer is a success or a 4xx in API.md's shape that its
// site chose: a race with another request is never a server fault, nor a
// refusal only the fallback of decision 0177 caught. ASSESSD_HOSTILE_ROUNDS and
// ASSESSD_HOSTILE_SEED lengthen and vary the hunt, as for the other
// hostile sweeps.
func TestConcurrentWritesOverSharedRows(t *testing.T) {
	t.Parallel()
	rounds, seed := hostileRounds(t)
	// The quota would answer most of the sweep 429 before it reached a row.
	e := apptest.NewWithConfig(t, func(c *app.Config) { c.RequestsPerMinute = func(string) int { return 1 << 20 } })
	school, vendor := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	keys := map[bool]string{false: school.Keys[tenancy.RoleOwner], true: vendor.Keys[tenancy.RoleOwner]}
	rows := &sharedRows{ids: map[string][]string{}, questions: map[string][]string{}, examOf: map[string]string{}}
	rows.add("users", school.Users[tenancy.RoleStudent].ID)
	check := newShapeChecker()

	const clients = 8
	var (
		mu       sync.Mutex
		sent     int
		statuses = map[int]int{}
		reasons  = map[string]int{} // of the 4xx, for the log
		failures []string
		wg       sync.WaitGroup
	)
	for c := range clients {
		rng := rand.New(rand.NewPCG(seed, uint64(c)))
		wg.Go(func() {
			for range rounds * 4 {
				req := pick(rng, rowOperations)(rng, rows)
				var header http.Header
				if req.method != http.MethodGet && req.method != http.MethodDelete && rng.IntN(4) == 0 {
					// A few keys shared by every client: requests race
					// for them, run once, replay, or are refused.
					header = http.Header{"Idempotency-Key": {"shared-" + strconv.Itoa(rng.IntN(8))}}
				}
				r := e.DoWith(req.method, req.path, keys[req.vendor], req.body, header)
				if r.Status == http.StatusOK && req.created != "" {
					rows.add(req.created, apptest.Str(r.Body, "id"))
					rows.addChild(req.exam, req.created, apptest.Str(r.Body, "id"))
				}
				mu.Lock()
				sent++
				statuses[r.Status]++
				if r.Status >= 400 {
					reasons[strconv.Itoa(r.Status)+" "+r.Reason()]++
				}
				problem := check.problem(r)
				if untranslated[r.Reason()] {
					problem = "a database refusal no site translated (decision 0177)"
				}
				if problem != "" && len(failures) < 40 {
					failures = append(failures, fmt.Sprintf("%s %s body %v: %d %s: %s", req.method, req.path, req.body, r.Status, r.Raw, problem))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d requests from %d clients, by status %v (seed %d); refusals %v", sent, clients, statuses, seed, reasons)
	for _, f := range failures {
		t.Error(f)
	}
	// The sweep means something only if the rows it races over were
	// created, changed and deleted.
	if statuses[http.StatusOK] < sent/4 || statuses[http.StatusNotFound] == 0 {
		t.Errorf("by status %v: too few writes succeeded, or none met a deleted row", statuses)
	}
}

// untranslated are the reasons of apihttp.ToConnect's fallback: the answer is
// a 4xx, but the site that met the refusal should have said what it means.
var untranslated = map[string]bool{"REFERENCE_GONE": true, "ALREADY_EXISTS": true, "VALUE_NOT_STORABLE": true, "CONCURRENT_UPDATE": true}

// sharedRows are the ids the clients made, deleted or not: a request names
// one at random, so it may meet the row's deletion.
type sharedRows struct {
	mu        sync.Mutex
	ids       map[string][]string // by collection: "folders", "exams", ...
	questions map[string][]string // by exam
	examOf    map[string]string   // a result's exam
}

func (s *sharedRows) add(collection, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids[collection] = append(s.ids[collection], id)
}

// addChild records the exam of a question or result made in one.
func (s *sharedRows) addChild(exam, collection, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch collection {
	case "questions":
		s.questions[exam] = append(s.questions[exam], id)
	case "results":
		s.examOf[id] = exam
	}
}

// pick returns one id of the collection, or a well-formed id of no row
// when none was made yet.
func (s *sharedRows) pick(rng *rand.Rand, collection string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ids := s.ids[collection]; len(ids) > 0 {
		return pick(rng, ids)
	}
	return "nxt_01JD3M4Q9ZB8K1T7W2X5C6V0NA"
}

func (s *sharedRows) questionsOf(exam string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.questions[exam]...)
}

// rowRequest is one request of the sweep; created names the collection of
// the row it makes, if any; vendor sends it as the vendor, not the school.
type rowRequest struct {
	method, path string
	body         any
	created      string
	exam         string
	vendor       bool
}

// orNone is id, or now and then "" (the root, no folder).
func orNone(rng *rand.Rand, id string) string {
	if rng.IntN(4) == 0 {
		return ""
	}
	return id
}

// rowOperations are the requests the clients choose from, weighted by
// repetition towards the ones that refer to other rows.
var rowOperations = []func(rng *rand.Rand, s *sharedRows) rowRequest{
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		body := map[string]any{"name": "F"}
		if p := orNone(rng, s.pick(rng, "folders")); p != "" {
			body["parentId"] = p
		}
		return rowRequest{method: "POST", path: "/folders", body: body, created: "folders"}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "PATCH", path: "/folders/" + s.pick(rng, "folders"),
			body: map[string]any{"parentId": orNone(rng, s.pick(rng, "folders")), "name": "G"}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "DELETE", path: "/folders/" + s.pick(rng, "folders")}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		body := map[string]any{"name": "E", "language": "en"}
		if f := orNone(rng, s.pick(rng, "folders")); f != "" {
			body["folderId"] = f
		}
		return rowRequest{method: "POST", path: "/exams", body: body, created: "exams"}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "PATCH", path: "/exams/" + s.pick(rng, "exams"),
			body: map[string]any{"folderId": orNone(rng, s.pick(rng, "folders")), "durationMinutes": 1 + rng.IntN(90)}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "DELETE", path: "/exams/" + s.pick(rng, "exams")}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		exam := s.pick(rng, "exams")
		return rowRequest{method: "POST", path: "/exams/" + exam + "/questions", created: "questions", exam: exam,
			body: map[string]any{"type": "numeric", "prompt": "1+1?", "config": map[string]any{"correct": 2}, "points": 1 + rng.IntN(5)}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		exam := s.pick(rng, "exams")
		return rowRequest{method: "PATCH", path: "/exams/" + exam + "/questions/" + questionOf(rng, s, exam),
			body: map[string]any{"prompt": "2+2?", "config": map[string]any{"correct": 4}}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		exam := s.pick(rng, "exams")
		return rowRequest{method: "DELETE", path: "/exams/" + exam + "/questions/" + questionOf(rng, s, exam)}
	},
	submitRequest, submitRequest,
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		result := s.pick(rng, "results")
		s.mu.Lock()
		exam := s.examOf[result]
		s.mu.Unlock()
		return rowRequest{method: "PATCH", path: "/results/" + result + "/answers/" + questionOf(rng, s, exam),
			body: map[string]any{"value": rng.IntN(5)}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "POST", path: "/users", created: "users",
			body: map[string]any{"email": "s" + strconv.FormatUint(rng.Uint64(), 10) + "@example.com", "name": "S", "role": "student"}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "PATCH", path: "/users/" + s.pick(rng, "users"), body: map[string]any{"name": "T", "metadata": map[string]any{"grade": rng.IntN(12)}}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "DELETE", path: "/users/" + s.pick(rng, "users")}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "GET", path: "/exams/" + s.pick(rng, "exams") + "/results/summary"}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "GET", path: "/exams/" + s.pick(rng, "exams") + "/export?format=json"}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		exam := s.pick(rng, "exams")
		return rowRequest{method: "POST", path: "/exams/" + exam + "/questions/" + questionOf(rng, s, exam) + "/regenerations",
			body: map[string]any{"instructions": "simpler"}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "POST", path: "/question-types", created: "question-types", vendor: true,
			body: map[string]any{"key": "t" + strconv.FormatUint(rng.Uint64(), 10), "name": "Yes", "public": true,
				"responseProcessing": map[string]any{"condition": `=answer.value = 1`}}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "PATCH", path: "/question-types/" + s.pick(rng, "question-types"), vendor: true,
			body: map[string]any{"deprecated": rng.IntN(2) == 0, "responseProcessing": map[string]any{"condition": `=answer.value >= 2`}}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "POST", path: "/question-types/" + s.pick(rng, "question-types") + pick(rng, []string{"/enable", "/disable"}),
			body: map[string]any{}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		exam := s.pick(rng, "exams")
		return rowRequest{method: "POST", path: "/exams/" + exam + "/questions", created: "questions", exam: exam,
			body: map[string]any{"type": s.pick(rng, "question-types"), "prompt": "Say one.", "config": map[string]any{}}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "POST", path: "/embed-sessions",
			body: map[string]any{"flow": "student-exam", "actor": s.pick(rng, "users"), "examId": s.pick(rng, "exams")}}
	},
	// Classes whose few external ids collide, and rosters naming users
	// and classes being deleted.
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "POST", path: "/classes", created: "classes",
			body: map[string]any{"name": "C", "externalId": orNone(rng, "sis-"+strconv.Itoa(rng.IntN(4)))}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "PATCH", path: "/classes/" + s.pick(rng, "classes"),
			body: map[string]any{"externalId": orNone(rng, "sis-"+strconv.Itoa(rng.IntN(4)))}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "DELETE", path: "/classes/" + s.pick(rng, "classes")}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "POST", path: "/classes/" + s.pick(rng, "classes") + "/members",
			body: map[string]any{"userId": s.pick(rng, "users"), "role": "student"}}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "DELETE", path: "/classes/" + s.pick(rng, "classes") + "/members/" + s.pick(rng, "users")}
	},
	func(rng *rand.Rand, s *sharedRows) rowRequest {
		return rowRequest{method: "POST", path: "/embed-sessions",
			body: map[string]any{"flow": "student-results", "actor": s.pick(rng, "users"), "resultId": s.pick(rng, "results")}}
	},
}

// submitRequest submits a student's answers to an exam's questions, any of
// which may be gone by then.
func submitRequest(rng *rand.Rand, s *sharedRows) rowRequest {
	exam := s.pick(rng, "exams")
	var answers []map[string]any
	for _, q := range s.questionsOf(exam) {
		answers = append(answers, map[string]any{"questionId": q, "value": rng.IntN(4)})
	}
	return rowRequest{method: "POST", path: "/exams/" + exam + "/results", created: "results", exam: exam,
		body: map[string]any{"userId": s.pick(rng, "users"), "answers": answers}}
}

// questionOf is one question made in exam, or one of another exam.
func questionOf(rng *rand.Rand, s *sharedRows, exam string) string {
	if qs := s.questionsOf(exam); len(qs) > 0 && rng.IntN(8) > 0 {
		return pick(rng, qs)
	}
	return s.pick(rng, "questions")
}
