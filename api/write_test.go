package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/internal/platform/errs"
)

// TestPlainHandlersWriteCompactJSON: errors written by middleware and the
// bodies of plain handlers are compact, like the transcoder's, whatever
// spacing protojson chooses in this build.
func TestPlainHandlersWriteCompactJSON(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/exam-imports", nil)
	for name, write := range map[string]func(http.ResponseWriter){
		"error": func(w http.ResponseWriter) {
			WriteErrorStatus(w, http.StatusNotFound, NewError(connect.CodeNotFound, "NOT_FOUND", "no such exam", "examId", nil))
		},
		"body": func(w http.ResponseWriter) {
			writeProtoJSON(w, r, &v1.ExamImport{Id: "imp_1", ExamId: "exm_1"})
		},
	} {
		rec := httptest.NewRecorder()
		write(rec)
		var compact bytes.Buffer
		if err := json.Compact(&compact, rec.Body.Bytes()); err != nil {
			t.Fatalf("%s: %v in %s", name, err, rec.Body)
		}
		if compact.String() != rec.Body.String() {
			t.Errorf("%s body %s is not compact JSON", name, rec.Body)
		}
	}
}

// TestKindsAnswerTheAPIStatus: the status errs gives a kind, which the
// pages answer with, is the one the API answers through its Connect code.
func TestKindsAnswerTheAPIStatus(t *testing.T) {
	for kind, code := range kindCodes {
		if got, want := kind.HTTPStatus(), httpStatus[code]; got != want {
			t.Errorf("kind %d: errs says %d, the API answers %d", kind, got, want)
		}
	}
	if len(kindCodes) != int(errs.KindUnavailable) {
		t.Errorf("%d kinds mapped to Connect codes, want every kind up to KindUnavailable (%d)", len(kindCodes), errs.KindUnavailable)
	}
}
