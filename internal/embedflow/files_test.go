package embedflow_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/assessd/assessd/api"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/testkit/browsertest"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// removeAnUpload uploads file as a second file of question and removes it
// with its button, as a student does: the list is back to one file and the
// removed file's URL answers 404 (decision 0155).
func removeAnUpload(t *testing.T, chrome context.Context, question, file string) {
	t.Helper()
	list := `#files-` + question + ` .file-list`
	// A swapped list's buttons are wired once htmx has settled it.
	settled := chromedp.Poll(`!document.querySelector("#files-`+question+`.htmx-added")`, nil, chromedp.WithPollingTimeout(10*time.Second))
	var removed string
	var ok bool
	err := chromedp.Run(chrome,
		settled,
		chromedp.SetUploadFiles(`#file-`+question, []string{file}, chromedp.ByQuery),
		chromedp.Click(`#files-`+question+` .upload button`, chromedp.ByQuery),
		chromedp.WaitVisible(list+` li:nth-child(2) a`, chromedp.ByQuery),
		settled,
		chromedp.AttributeValue(list+` li:nth-child(2) a`, "href", &removed, &ok, chromedp.ByQuery),
		chromedp.Click(list+` li:nth-child(2) button`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelectorAll("`+list+` li").length === 1`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || !ok {
		t.Fatalf("removing an upload: %v", err)
	}
	res, err := http.Get(removed)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("the removed file %s answers %d, want 404", removed, res.StatusCode)
	}
}

// TestStudentUploadsFileAnswer drives a file answer in Chromium at 1280
// and 360 px: refused files say why in the page, a PNG uploads to the
// base URL's /media/, and the submitted answer's file is served back and
// fetched by the grading fetcher.
func TestStudentUploadsFileAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t)
	f := newFixtureWith(t, redistest.Client(t), db, nilGenerator)
	content := assessment.NewService(db)
	mux := http.NewServeMux()
	f.svc.Routes(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	const limit = 64 << 10
	files := media.NewFiles(db, srv.URL, limit)
	f.svc.Files = files
	mux.Handle("GET /media/{id}/{name}", api.MediaFiles(files))

	dir := t.TempDir()
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 8, 8))); err != nil {
		t.Fatal(err)
	}
	plant, big, notes := filepath.Join(dir, "plant.png"), filepath.Join(dir, "big.png"), filepath.Join(dir, "notes.txt")
	for name, data := range map[string][]byte{plant: img.Bytes(), big: append(img.Bytes(), make([]byte, limit)...), notes: []byte("leaves")} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	chrome := browsertest.NewChrome(t)
	chromedp.ListenTarget(chrome, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok && d.Type == page.DialogTypeConfirm {
			go func() { _ = chromedp.Run(chrome, page.HandleJavaScriptDialog(true)) }()
		}
	})
	fetcher := media.NewFetcher([]string{media.PrefixOf(srv.URL)}, media.Options{})
	for _, width := range []int64{1280, 360} {
		exam, err := content.CreateExam(f.teacher, assessment.NewExam{Name: "Leaves", Language: "en"})
		if err != nil {
			t.Fatal(err)
		}
		q, err := content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeFileUpload, Prompt: "Photograph a leaf.", Points: 2,
			Config: map[string]any{"rubric": "a leaf", "maxFiles": 2, "acceptedTypes": []any{"image/png", "image/jpeg"}}})
		if err != nil {
			t.Fatal(err)
		}
		sess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "student-exam", ActorID: f.users[tenancy.RoleStudent].ID, ExamID: exam.ID})
		if err != nil {
			t.Fatal(err)
		}
		input, upload := `#file-`+q.ID, `#files-`+q.ID+` .upload button`
		refused := func(file, want string) {
			t.Helper()
			var msg, at string
			err := chromedp.Run(chrome,
				chromedp.SetUploadFiles(input, []string{file}, chromedp.ByQuery),
				chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).click()`, upload), nil),
				// Until htmx settles the swapped list (20 ms, longer on a
				// loaded machine) its new button is not yet wired, and a
				// click then posts the whole page: CI once caught the next
				// refusal doing so. A student's second try is never that
				// quick; this one waits as they would.
				chromedp.Poll(fmt.Sprintf(`(document.getElementById("error-%[1]s") || {textContent: ""}).textContent.includes(%[2]q) &&
					!document.querySelector("#files-%[1]s.htmx-added")`, q.ID, want), nil,
					chromedp.WithPollingTimeout(30*time.Second)),
				chromedp.Text(`#error-`+q.ID, &msg, chromedp.ByQuery),
				chromedp.Location(&at))
			// htmx answers in place: the page itself was not posted.
			if err != nil || !strings.Contains(msg, want) || at != srv.URL+"/embed/"+sess.ID {
				// What the page was showing instead, for the next reader.
				var loc, body string
				var shot []byte
				wait, cancel := context.WithTimeout(chrome, 5*time.Second)
				_ = chromedp.Run(wait, chromedp.Location(&loc), chromedp.Text("body", &body, chromedp.ByQuery), chromedp.CaptureScreenshot(&shot))
				cancel()
				browsertest.SaveArtifact(t, fmt.Sprintf("embed-student-file-refusal-missed-%d.png", width), shot)
				t.Fatalf("at %d px, uploading %s: %v, message %q, want %q; the page at %s read:\n%.600s", width, filepath.Base(file), err, msg, want, loc, body)
			}
		}
		var shot []byte
		err = chromedp.Run(chrome, chromedp.EmulateViewport(width, 900), chromedp.Navigate(srv.URL+"/embed/"+sess.ID),
			// htmx (deferred, set up at DOMContentLoaded) answers the
			// uploads below; before that they post the page itself.
			chromedp.Poll(`document.readyState === "complete"`, nil, chromedp.WithPollingTimeout(10*time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		refused(big, "too large. Files may be at most 64 KiB")
		refused(notes, "not accepted here. Accepted types: image/png, image/jpeg")
		if err := chromedp.Run(chrome, chromedp.CaptureScreenshot(&shot)); err == nil {
			browsertest.SaveArtifact(t, fmt.Sprintf("embed-student-file-refused-%d.png", width), shot)
		}
		var focused bool
		err = chromedp.Run(chrome,
			chromedp.SetUploadFiles(input, []string{plant}, chromedp.ByQuery),
			chromedp.Click(upload, chromedp.ByQuery),
			chromedp.WaitVisible(`#files-`+q.ID+` .file-list a`, chromedp.ByQuery),
			chromedp.Poll(`document.activeElement.id === "file-`+q.ID+`"`, &focused, chromedp.WithPollingTimeout(5*time.Second)))
		if err != nil || !focused {
			t.Fatalf("at %d px, uploading the PNG: %v, focus back on the file input: %v", width, err, focused)
		}
		if width == 1280 {
			removeAnUpload(t, chrome, q.ID, plant)
		}
		name := "embed-student-exam-file"
		if width != 1280 {
			name += "-narrow"
		}
		browsertest.CheckPage(t, chrome, srv.URL+"/embed/"+sess.ID, name)
		err = chromedp.Run(chrome,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(srv.URL+"/embed/"+sess.ID),
			chromedp.Click(`.exam-nav button[type=submit]`, chromedp.ByQuery),
			chromedp.WaitVisible(`.notice`, chromedp.ByQuery))
		if err != nil {
			t.Fatalf("at %d px, submitting: %v", width, err)
		}
		opened, err := f.svc.Open(ctx, sess.ID)
		if err != nil || opened.ResultID == "" {
			t.Fatalf("at %d px, not submitted: %v", width, err)
		}
		res, err := content.Result(f.teacher, exam.ID, opened.ResultID)
		if err != nil || len(res.Answers) != 1 || len(res.Answers[0].Files) != 1 {
			t.Fatalf("at %d px, result %+v, %v", width, res.Answers, err)
		}
		fileURL := res.Answers[0].Files[0]
		if !strings.HasPrefix(fileURL, srv.URL+"/media/med_") || !strings.HasSuffix(fileURL, "/plant.png") {
			t.Fatalf("answer file %s is not under %s/media/", fileURL, srv.URL)
		}
		served, err := http.Get(fileURL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(served.Body)
		served.Body.Close()
		h := served.Header
		if served.StatusCode != 200 || !bytes.Equal(body, img.Bytes()) || h.Get("Content-Type") != "image/png" || h.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.HasPrefix(h.Get("Content-Disposition"), "inline") {
			t.Fatalf("serving %s: %d %v", fileURL, served.StatusCode, h)
		}
		// The student's results link the file by its name.
		review, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "student-results", ActorID: f.users[tenancy.RoleStudent].ID, ResultID: opened.ResultID})
		if err != nil {
			t.Fatal(err)
		}
		var linked string
		err = chromedp.Run(chrome, chromedp.EmulateViewport(width, 900), chromedp.Navigate(srv.URL+"/embed/"+review.ID),
			chromedp.Text(fmt.Sprintf(`table.results .file-list a[href=%q]`, fileURL), &linked, chromedp.ByQuery))
		if err != nil || linked != "plant.png" {
			t.Fatalf("at %d px, results link to %s: %q, %v", width, fileURL, linked, err)
		}
		if width == 1280 { // CheckPage itself looks at every width
			browsertest.CheckPage(t, chrome, srv.URL+"/embed/"+review.ID, "embed-student-results-file")
		}
		// Grading fetches it: the base URL's /media/ is on the media CDN.
		fetchCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		got, err := fetcher.Fetch(fetchCtx, fileURL)
		cancel()
		if err != nil || !bytes.Equal(got.Data, img.Bytes()) || got.ContentType != "image/png" {
			t.Fatalf("grading fetch of %s: %v", fileURL, err)
		}
	}

	// Anything but an image is a download, typed as it was sniffed.
	textURL, err := files.Put(tenancy.WithCaller(ctx, &tenancy.Caller{Kind: tenancy.KindEmbed, OrgID: callerOrg(f.teacher), UserID: f.users[tenancy.RoleStudent].ID,
		Role: tenancy.RoleStudent, Scopes: []tenancy.Scope{tenancy.ScopeResultsWrite}}), "file", "notes.html", []byte("<b>not html</b> plain words"))
	if err == nil {
		t.Fatalf("stored an HTML file as %s", textURL)
	}
	textURL, err = files.Put(tenancy.WithCaller(ctx, &tenancy.Caller{Kind: tenancy.KindEmbed, OrgID: callerOrg(f.teacher), UserID: f.users[tenancy.RoleStudent].ID,
		Role: tenancy.RoleStudent, Scopes: []tenancy.Scope{tenancy.ScopeResultsWrite}}), "file", "notes.txt", []byte("leaves are green"))
	if err != nil {
		t.Fatal(err)
	}
	served, err := http.Get(textURL)
	if err != nil {
		t.Fatal(err)
	}
	served.Body.Close()
	if ct, cd := served.Header.Get("Content-Type"), served.Header.Get("Content-Disposition"); ct != "text/plain; charset=utf-8" || cd != `attachment; filename="notes.txt"` {
		t.Fatalf("text file served as %q, %q", ct, cd)
	}
}

func callerOrg(ctx context.Context) string {
	c, _ := tenancy.CallerFrom(ctx)
	return c.OrgID
}

// TestFileAnswerLimits posts uploads as htmx does: the question's maxFiles
// holds, removal frees a place, and only the session's exam's file
// questions take files.
func TestFileAnswerLimits(t *testing.T) {
	t.Parallel()
	f, rdb, srv := filesFixture(t)
	exam, err := f.content.CreateExam(f.teacher, assessment.NewExam{Name: "Leaves", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := f.content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeFileUpload, Prompt: "Notes?", Points: 1,
		Config: map[string]any{"maxFiles": 1}})
	if err != nil {
		t.Fatal(err)
	}
	essay, err := f.content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeEssay, Prompt: "Why?", Points: 1})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "student-exam", ActorID: f.users[tenancy.RoleStudent].ID, ExamID: exam.ID})
	if err != nil {
		t.Fatal(err)
	}
	post := func(question string, data []byte) (int, string) {
		return uploadPart(t, srv.URL+"/embed/"+sess.ID, question, data)
	}
	if code, page := post(q.ID, []byte("leaves are green")); code != 200 || !strings.Contains(page, "/media/med_") || !strings.Contains(page, "1 / 1") {
		t.Fatalf("first upload: %d %s", code, page)
	}
	if code, page := post(q.ID, []byte("more")); code != 422 || !strings.Contains(page, "No more files can be added") {
		t.Fatalf("upload past maxFiles: %d %s", code, page)
	}
	for _, other := range []string{essay.ID, "qst_01M8964WQZNR2YD0P90ZKGYJN3"} {
		if code, _ := post(other, []byte("x")); code != 404 {
			t.Errorf("upload to %s: %d, want 404", other, code)
		}
	}
	draft := func() []string {
		s, _ := f.svc.Open(context.Background(), sess.ID)
		d, err := embedflow.NewStore(rdb).Draft(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		return d.Answers[q.ID+".files"]
	}
	saved := draft()
	if len(saved) != 1 {
		t.Fatalf("draft files %v", saved)
	}
	// The autosaved exam form cannot change the list; removal can.
	if res, err := http.PostForm(srv.URL+"/embed/"+sess.ID+"/answers", url.Values{"shown": {q.ID}, q.ID + ".files": {"https://evil.example/x.png"}}); err == nil {
		res.Body.Close()
	}
	if got := draft(); len(got) != 1 || got[0] != saved[0] {
		t.Fatalf("after autosave: %v", got)
	}
	if res, err := http.PostForm(srv.URL+"/embed/"+sess.ID+"/files/"+q.ID+"/remove", url.Values{"url": {saved[0]}}); err == nil {
		res.Body.Close()
	}
	if got := draft(); len(got) != 0 {
		t.Fatalf("after removal: %v", got)
	}
}

// filesFixture is a fixture whose pages, served on srv, take file answers,
// with the Redis its drafts are stored in.
func filesFixture(t *testing.T) (fixture, *redis.Client, *httptest.Server) {
	t.Helper()
	db, rdb := storetest.New(t), redistest.Client(t)
	f := newFixtureWith(t, rdb, db, nilGenerator)
	f.svc.Files = media.NewFiles(db, "http://127.0.0.1:8080", 0)
	return f, rdb, serve(t, f)
}

// uploadPart posts data as notes.txt to the file question of the embed
// session at base, as htmx does, and returns the status and the body.
func uploadPart(t *testing.T, base, question string, data []byte) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", "notes.txt")
	_, _ = part.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/files/"+question, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return send(t, req, true)
}

// TestUploadPastThePendingBound: a student whose files not yet submitted
// reach media.Files.PendingBytes is told so on the file question, and
// nothing is stored.
func TestUploadPastThePendingBound(t *testing.T) {
	t.Parallel()
	db, rdb := storetest.New(t), redistest.Client(t)
	f := newFixtureWith(t, rdb, db, nilGenerator)
	files := media.NewFiles(db, "http://127.0.0.1:8080", 64)
	f.svc.Files = files
	srv := serve(t, f)
	content := assessment.NewService(db)
	exam, err := content.CreateExam(f.teacher, assessment.NewExam{Name: "Leaves", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeFileUpload, Prompt: "Notes?", Points: 1})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "student-exam", ActorID: f.users[tenancy.RoleStudent].ID, ExamID: exam.ID})
	if err != nil {
		t.Fatal(err)
	}
	student := tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindEmbed, OrgID: callerOrg(f.teacher),
		UserID: f.users[tenancy.RoleStudent].ID, Role: tenancy.RoleStudent, Scopes: []tenancy.Scope{tenancy.ScopeResultsWrite}})
	for range media.PendingUploads {
		if _, err := files.Put(student, "file", "old.txt", bytes.Repeat([]byte("a"), 64)); err != nil {
			t.Fatal(err)
		}
	}
	code, page := uploadPart(t, srv.URL+"/embed/"+sess.ID, q.ID, []byte("leaves"))
	if want := "have reached the most you may keep: 3 KiB."; code != http.StatusUnprocessableEntity || !strings.Contains(page, want) ||
		strings.Contains(page, "/media/med_") {
		t.Fatalf("upload past the bound: %d, want 422 saying %q and no file:\n%s", code, want, page)
	}
}
