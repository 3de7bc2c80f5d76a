package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// GET /results/{id}?wait=... holds a result that is grading until it is
// finished (decision 0135): here a 20 s wait ends as soon as grading
// finishes, on both read paths, for a student reading their own result.
// Waits outside 0-30 s and undecodable ones are 400s in the API's error
// shape; a foreign result is a 404 at once.
func TestReadingAResultWaitsForItsGrading(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	other := e.NewTenant("FR", "pro")
	teacher, student := tn.Keys[tenancy.RoleTeacher], tn.Keys[tenancy.RoleStudent]
	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Waiting", "language": "en"}).Must(t, 200).Body, "id")
	essay := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "essay", "prompt": "Explain photosynthesis."}).Must(t, 200).Body, "id")
	res := e.Do("POST", "/exams/"+exam+"/results", student, map[string]any{"answers": []any{
		map[string]any{"questionId": essay, "value": "Light becomes sugar."}}}).Must(t, 200).Body
	id := apptest.Str(res, "id")
	if res["status"] != "grading" {
		t.Fatalf("submitted %v", res)
	}

	for _, wait := range []string{"31s", "-1s", "soon"} {
		if r := e.Do("GET", "/results/"+id+"?wait="+wait, student, nil).Must(t, 400); r.Field() != "wait" {
			t.Errorf("wait=%s: %s", wait, r.Raw)
		}
	}
	// A value that is no duration at all says what one looks like.
	for _, wait := range []string{"soon", "20"} {
		r := e.Do("GET", "/results/"+id+"?wait="+wait, student, nil).Must(t, 400)
		if msg, _ := r.Body["message"].(string); msg != "wait: must be a number of seconds with an s, e.g. 20s" {
			t.Errorf("wait=%s: %s", wait, r.Raw)
		}
	}
	start := time.Now()
	e.Do("GET", "/results/"+id+"?wait=20s", other.Keys[tenancy.RoleOwner], nil).Must(t, 404)
	if r := e.Do("GET", "/results/"+id+"?wait=0.2s", student, nil).Must(t, 200); r.Body["status"] != "grading" || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("a wait that ran out after %s: %s", time.Since(start), r.Raw)
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
			req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+path+"?wait=20s", nil)
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
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	if err := e.App.Assessment.RecordGrade(ctx, id, essay, 1, "Good.", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.Assessment.FinishResult(ctx, id, nil); err != nil {
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
