package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The transcoder flushes at the end of every response. A REST response is
// unary, so it still goes out whole, with its Content-Length, not chunked.
func TestRESTResponsesAreSentWithTheirLength(t *testing.T) {
	const body = `{"id":"usr_1","name":"Ada"}`
	srv := httptest.NewServer(jsonErrors(nil, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
		w.(http.Flusher).Flush()
	})))
	defer srv.Close()

	res, err := http.Get(srv.URL + "/users/usr_1")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != body || res.ContentLength != int64(len(body)) || len(res.TransferEncoding) != 0 {
		t.Fatalf("body %q, Content-Length %d, Transfer-Encoding %v; want %q sent with its length",
			got, res.ContentLength, res.TransferEncoding, body)
	}
}
