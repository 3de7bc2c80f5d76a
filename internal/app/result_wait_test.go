package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/assessd/assessd/tenancy"
)

// GET /results/{id}?wait=... holds a result that is grading until it is
// finished (decision 0135): here a 20 s wait ends as soon as grading
// finishes, on both read paths, for a student reading their own result.
// Waits outside 0-30 s and undecodable ones are 400s in the API's error
// shape; a foreign result is a 404 at once.
func TestReadingAResultWaitsForItsGrading(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	other := e.newTenant("FR", "pro")
	teacher, student := tn.keys[tenancy.RoleTeacher], tn.keys[tenancy.RoleStudent]
	exam := str(e.do("POST", "/exams", teacher, map[string]any{"name": "Waiting", "language": "en"}).must(t, 200).body, "id")
	essay := str(e.do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "essay", "prompt": "Explain photosynthesis."}).must(t, 200).body, "id")
	res := e.do("POST", "/exams/"+exam+"/results", student, map[string]any{"answers": []any{
		map[string]any{"questionId": essay, "value": "Light becomes sugar."}}}).must(t, 200).body
	id := str(res, "id")
	if res["status"] != "grading" {
		t.Fatalf("submitted %v", res)
	}

	for _, wait := range []string{"31s", "-1s", "soon"} {
		if r := e.do("GET", "/results/"+id+"?wait="+wait, student, nil).must(t, 400); r.field() != "wait" {
			t.Errorf("wait=%s: %s", wait, r.raw)
		}
	}
	// A value that is no duration at all says what one looks like.
	for _, wait := range []string{"soon", "20"} {
		r := e.do("GET", "/results/"+id+"?wait="+wait, student, nil).must(t, 400)
		if msg, _ := r.body["message"].(string); msg != "wait: must be a number of seconds with an s, e.g. 20s" {
			t.Errorf("wait=%s: %s", wait, r.raw)
		}
	}
	start := time.Now()
	e.do("GET", "/results/"+id+"?wait=20s", other.keys[tenancy.RoleOwner], nil).must(t, 404)
	if r := e.do("GET", "/results/"+id+"?wait=0.2s", student, nil).must(t, 200); r.body["status"] != "grading" || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("a wait that ran out after %s: %s", time.Since(start), r.raw)
	}

	type read struct {
		status string
		score  float64
		err    error
		after  time.Duration
	}
	waiting := map[string]chan read{"/results/" + id: make(chan read, 1), "/exams/" + exam + "/results/" + id: make(chan read, 1)}
	for path, done := range waiting {
		go func() {
			start := time.Now()
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path+"?wait=20s", nil)
			req.Header.Set("Authorization", "Bearer "+student)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- read{err: err}
				return
			}
			defer resp.Body.Close()
			var body struct {
				Status string
				Score  float64
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			done <- read{body.Status, body.Score, err, time.Since(start)}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	graded := time.Now()
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.org.ID))
	if err := e.app.Assessment.RecordGrade(ctx, id, essay, 1, "Good.", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.Assessment.FinishResult(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	for path, done := range waiting {
		select {
		case r := <-done:
			if r.err != nil || r.status != "graded" || r.score != 1 {
				t.Errorf("%s: %+v", path, r)
			}
			if since := time.Since(graded); since > 2*time.Second {
				t.Errorf("%s answered %s after grading finished", path, since)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the wait did not end when grading finished", path)
		}
	}
}
