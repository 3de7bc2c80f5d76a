package apihttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/assessd/assessd/internal/platform/errs"
)

// TestErrorsAreCompactJSON: errors written by middleware are compact, like
// the transcoder's, whatever spacing protojson chooses in this build.
func TestErrorsAreCompactJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteErrorStatus(rec, http.StatusNotFound, NewError(connect.CodeNotFound, "NOT_FOUND", "no such exam", "examId", nil))
	var compact bytes.Buffer
	if err := json.Compact(&compact, rec.Body.Bytes()); err != nil {
		t.Fatalf("%v in %s", err, rec.Body)
	}
	if compact.String() != rec.Body.String() {
		t.Errorf("error body %s is not compact JSON", rec.Body)
	}
}

// TestAppendCompactDropsSpacesOutsideStrings: the spaces a spacing build
// writes after commas go, those in strings stay, after base.
func TestAppendCompactDropsSpacesOutsideStrings(t *testing.T) {
	in := `{"a":1, "b":[true, "c, \"d\", e\\", "\\"], "f":{"g":null, "h":" , "}}`
	var want bytes.Buffer
	want.WriteString("x")
	if err := json.Compact(&want, []byte(in)); err != nil {
		t.Fatal(err)
	}
	got, err := AppendCompact([]byte("x"), []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Errorf("AppendCompact = %s, want %s", got, want.String())
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
