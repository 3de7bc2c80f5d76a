package app_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/assessd/assessd/tenancy"
)

// TestPageBodiesBounded: the pages' request bodies (OAuth endpoints, sign
// in, embed forms) are bounded by 1 MiB, as the API's are. A body declared
// larger gets 413 unread; one streamed without a length is read no further
// than the bound, whatever its encoding (a multipart form's files would go
// to disk). An embed flow's file answer keeps the upload limit.
func TestPageBodiesBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	exam, question := e.fileUploadExam(tn.keys[tenancy.RoleTeacher])
	sess := e.embedSession(tn.keys[tenancy.RoleTeacher], map[string]any{"flow": "student-exam", "actor": tn.users[tenancy.RoleStudent].ID, "examId": exam})

	for _, path := range []string{"/oauth/token", "/login", "/embed/" + sess + "/answers"} {
		form := "grant_type=client_credentials&x=" + strings.Repeat("a", 1<<20)
		res, err := http.Post(e.srv.URL+path, "application/x-www-form-urlencoded", strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s, a form of %d bytes: %d, want 413", path, len(form), res.StatusCode)
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
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, countingReader{pr, &sent})
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
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/embed/"+sess+"/files/"+question, &body)
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
