package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/tenancy"
)

// The transport alone answers both routes with its functions' results in
// the API's JSON, decodes a submission as the API does, and answers a
// domain error with its status (the server's middleware, not the
// transport, gives errors the API's shape), so what the benchmark measures
// through it is the API's transport work.
func TestTransportServesItsFunctions(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	user := tenancy.User{ID: "usr_01JX0000000000000000000000", OrgID: "org_01JX0000000000000000000000", Email: "ada@example.com",
		Name: "Ada", Role: tenancy.RoleAdmin, Metadata: tenancy.Metadata{"team": "red"}, CreatedAt: at, UpdatedAt: at}
	var submitted assessment.NewResult
	h, err := NewTransport(Transport{
		GetUser: func(_ context.Context, id string) (tenancy.User, error) {
			if id != user.ID {
				return tenancy.User{}, errs.NotFound("user")
			}
			return user, nil
		},
		SubmitResult: func(_ context.Context, examID string, in assessment.NewResult) (assessment.Result, error) {
			submitted = in
			return assessment.Result{ID: "res_01JX0000000000000000000000", ExamID: examID, UserID: in.UserID, Status: "graded",
				Score: 1, MaxScore: 2, SubmittedAt: at, GradedAt: at}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method, path, body string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req := httptest.NewRequest(method, path, r)
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %s: %v in %q", method, path, err, rec.Body.String())
		}
		return rec.Code, out
	}

	code, body := serve(http.MethodGet, "/users/"+user.ID, "")
	if code != http.StatusOK || body["id"] != user.ID || body["email"] != user.Email || body["role"] != "admin" ||
		body["createdAt"] != "2026-11-26T12:00:00Z" || body["metadata"].(map[string]any)["team"] != "red" {
		t.Errorf("GET the user: %d %v", code, body)
	}
	code, body = serve(http.MethodGet, "/users/usr_01JX0000000000000000000001", "")
	if code != http.StatusNotFound || body["message"] != "user not found" {
		t.Errorf("GET another user: %d %v, want 404 user not found", code, body)
	}

	code, body = serve(http.MethodPost, "/exams/exm_01JX0000000000000000000000/results",
		`{"userId": "usr_01JX0000000000000000000002", "answers": [{"questionId": "qst_1", "value": true}, {"questionId": "qst_2", "value": "b"}]}`)
	if code != http.StatusOK || body["examId"] != "exm_01JX0000000000000000000000" || body["status"] != "graded" || body["score"] != 1.0 {
		t.Errorf("POST a result: %d %v", code, body)
	}
	if submitted.UserID != "usr_01JX0000000000000000000002" || len(submitted.Answers) != 2 ||
		submitted.Answers[0].QuestionID != "qst_1" || submitted.Answers[0].Value != true || submitted.Answers[1].Value != "b" {
		t.Errorf("the submission decoded as %+v", submitted)
	}
}
