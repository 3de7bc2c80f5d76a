package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// TestPageBodiesBounded: the pages' request bodies (OAuth endpoints, sign
// in, embed forms) are bounded by 1 MiB, as the API's are. A body declared
// larger gets 413 unread; one streamed without a length is read no further
// than the bound, whatever its encoding (a multipart form's files would go
// to disk). An embed flow's file answer keeps the upload limit.
func TestPageBodiesBounded(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	exam, question := fileUploadExam(e, tn.Keys[tenancy.RoleTeacher])
	sess := e.EmbedSession(tn.Keys[tenancy.RoleTeacher], map[string]any{"flow": "student-exam", "actor": tn.Users[tenancy.RoleStudent].ID, "examId": exam})

	for _, path := range []string{"/oauth/token", "/login", "/embed/" + sess + "/answers"} {
		form := "grant_type=client_credentials&x=" + strings.Repeat("a", 1<<20)
		res, err := http.Post(e.Srv.URL+path, "application/x-www-form-urlencoded", strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s, a form of %d bytes: %d, want 413", path, len(form), res.StatusCode)
		}
		// The OAuth endpoints answer in JSON (TestOAuthEndpointsRefuseUnreadableBodiesInJSON).
		if ct := res.Header.Get("Content-Type"); path != "/oauth/token" && ct != "text/plain; charset=utf-8" {
			t.Errorf("%s, a form of %d bytes: %s, want text/plain", path, len(form), ct)
		}

		// 64 MiB of a file part, streamed without a length.
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			part, _ := mw.CreateFormFile("file", "big.bin")
			chunk := make([]byte, 1<<20)
			for range 64 {
				if _, err := part.Write(chunk); err != nil {
					pw.CloseWithError(err)
					return
				}
			}
			pw.CloseWithError(mw.Close())
		}()
		var sent atomic.Int64
		req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+path, countingReader{pr, &sent})
		req.Header.Set("Content-Type", mw.FormDataContentType())
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode >= 500 {
				t.Errorf("%s, a streamed multipart body: %d", path, res.StatusCode)
			}
		}
		pr.CloseWithError(io.ErrClosedPipe)
		// The client's and the kernel's buffers hold some beyond the bound.
		if mib := sent.Load() >> 20; mib > 16 {
			t.Errorf("%s read %d MiB of a streamed multipart body, bound 1 MiB", path, mib)
		}
	}

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", "notes.txt")
	_, _ = part.Write(bytes.Repeat([]byte("leaves are green\n"), 3<<20/17))
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/embed/"+sess+"/files/"+question, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("HX-Request", "true")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(list), "notes.txt") {
		t.Fatalf("a file answer of 3 MiB: %d %.300s", res.StatusCode, list)
	}
}

// TestOAuthEndpointsRefuseUnreadableBodiesInJSON: the token, revocation and
// introspection endpoints answer a form larger than 1 MiB with 413 in RFC
// 6749's error shape, as every other error of theirs, whether its length
// was declared (refused unread) or it was streamed without one (refused at
// the bound), not in the pages' plain text; and a body that cannot be read
// (a broken chunk) or parsed with 400 invalid_request, not as a form
// without its parameters (decision 0185).
func TestOAuthEndpointsRefuseUnreadableBodiesInJSON(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	form := "grant_type=client_credentials&token=" + strings.Repeat("a", 6<<20/5)
	for _, path := range []string{"/oauth/token", "/oauth/revoke", "/oauth/introspect"} {
		for _, streamed := range []bool{false, true} {
			var body io.Reader = strings.NewReader(form)
			if streamed {
				body = io.MultiReader(body) // no length: sent chunked
			}
			req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+path, body)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			checkOAuthError(t, fmt.Sprintf("%s, %d bytes (streamed: %t)", path, len(form), streamed), res,
				http.StatusRequestEntityTooLarge, "request body exceeds 1048576 bytes")
		}

		conn, err := net.Dial("tcp", e.Srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: assessd\r\nContent-Type: application/x-www-form-urlencoded\r\n"+
			"Transfer-Encoding: chunked\r\n\r\n9\r\ngrant_typ\r\nnot a chunk length\r\n")
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		checkOAuthError(t, path+", a broken chunk", res, http.StatusBadRequest, "error parsing form")
		conn.Close()

		res, err = http.Post(e.Srv.URL+path, "application/x-www-form-urlencoded", strings.NewReader("grant_type=client_credentials&token=%zz"))
		if err != nil {
			t.Fatal(err)
		}
		checkOAuthError(t, path+", a bad escape", res, http.StatusBadRequest, "error parsing form")
	}
}

// checkOAuthError checks that res, which it closes, is an RFC 6749 error
// response: status, JSON, not to be cached, invalid_request with
// description.
func checkOAuthError(t *testing.T, what string, res *http.Response, status int, description string) {
	t.Helper()
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var got struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || res.StatusCode != status ||
		res.Header.Get("Content-Type") != "application/json" || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s: %d %q %q %.200s, want %d application/json no-store", what, res.StatusCode,
			res.Header.Get("Content-Type"), res.Header.Get("Cache-Control"), raw, status)
		return
	}
	if got.Error != "invalid_request" || got.Description != description {
		t.Errorf("%s: %s, want invalid_request, %s", what, raw, description)
	}
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
