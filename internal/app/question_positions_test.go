package app_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// TestConcurrentQuestionCreatesGetDistinctPositions fires parallel creates
// at one exam: every one succeeds and the positions are 1..n.
func TestConcurrentQuestionCreatesGetDistinctPositions(t *testing.T) {
	t.Parallel()
	const n = 16
	e := apptest.New(t)
	key := e.NewTenant("US", "pro").Keys[tenancy.RoleTeacher]
	exam := e.Do("POST", "/exams", key, map[string]any{"name": "Race", "language": "en"}).Must(t, 200).Body
	url := e.Srv.URL + "/exams/" + exam["id"].(string) + "/questions"
	body, _ := json.Marshal(map[string]any{"type": "numeric", "prompt": "1+1?", "config": map[string]any{"correct": 2}})

	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := e.Srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			statuses[i] = res.StatusCode
		})
	}
	close(start)
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("create %d: status %d", i, s)
		}
	}
	var positions []int
	for _, q := range apptest.Items(e.Do("GET", "/exams/"+exam["id"].(string)+"/questions", key, nil).Must(t, 200).Body, "questions") {
		positions = append(positions, int(q["position"].(float64)))
	}
	slices.Sort(positions)
	for i, p := range positions {
		if p != i+1 {
			t.Fatalf("positions %v, want 1..%d", positions, n)
		}
	}
	if len(positions) != n {
		t.Fatalf("%d questions, want %d", len(positions), n)
	}
}
