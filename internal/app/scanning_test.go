package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/testsuite"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	scanningactivities "github.com/assessd/assessd/activities/scanning"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/membudget"
	"github.com/assessd/assessd/internal/scanning"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/sheettest"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
	scanningworkflow "github.com/assessd/assessd/workflows/scanning"
)

// visionAI is an OpenAI-compatible endpoint that records every request and
// answers transcriptions with text and grades with a fixed grade.
type visionAI struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newVisionAI(t *testing.T, text string) *visionAI {
	v := &visionAI{}
	v.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		v.mu.Lock()
		v.bodies = append(v.bodies, string(body))
		v.mu.Unlock()
		answer := map[string]any{"score": 4, "max_score": 5, "feedback": "Good.", "rationale": "Mentions light."}
		if strings.Contains(string(body), `"name":"transcription"`) {
			answer = map[string]any{"text": text, "blank": false, "confidence": 0.95}
		}
		content, _ := json.Marshal(answer)
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": string(content)}}}})
	}))
	t.Cleanup(v.Close)
	return v
}

func (v *visionAI) requests() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.bodies...)
}

// scanEnv is assessd with Temporal and both regions' workers, each on its
// own recording AI endpoint.
type scanEnv struct {
	*env
	eu, global *visionAI
	cdn        *httptest.Server
	cdnFiles   map[string][]byte
}

func newScanEnv(t *testing.T) *scanEnv {
	t.Helper()
	tc := devenvtest.Temporal(t)
	s := &scanEnv{eu: newVisionAI(t, "Light, water and CO2 make sugar."), global: newVisionAI(t, "Light, water and CO2 make sugar."),
		cdnFiles: map[string][]byte{}}
	s.cdn = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := s.cdnFiles[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", http.DetectContentType(data))
		_, _ = w.Write(data)
	}))
	t.Cleanup(s.cdn.Close)
	cdnPrefix := s.cdn.URL + "/media/"
	s.env = apptest.NewWithConfig(t, func(c *app.Config) { c.Temporal, c.MediaCDN = tc, []string{cdnPrefix} })
	fetcher := media.NewFetcher([]string{cdnPrefix}, media.Options{HTTPClient: s.cdn.Client()})
	reg := prometheus.NewRegistry()
	for region, endpoint := range map[string]*visionAI{"eu": s.eu, "global": s.global} {
		w, err := app.NewWorker(tc, s.DB, app.WorkerConfig{Region: region, Fetcher: fetcher,
			Provider:    ai.NewOpenAI(ai.OpenAIConfig{BaseURL: endpoint.URL, APIKey: "test-key", Model: "vision"}),
			Metrics:     gradingactivities.NewMetrics(prometheus.NewRegistry(), func(s string) string { return s }),
			ScanMetrics: scanningactivities.NewMetrics(reg, func(s string) string { return s })})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	return s
}

// upload posts files as a multipart scan request.
func upload(s *env, examID, key string, files ...[]byte) response {
	s.T.Helper()
	return uploadWith(s, examID, key, http.Header{}, files...)
}

// uploadWith is upload with extra headers. Each call draws its own
// multipart boundary, as clients do.
func uploadWith(s *env, examID, key string, header http.Header, files ...[]byte) response {
	s.T.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for i, f := range files {
		part, err := mw.CreateFormFile("file", "page"+string(rune('1'+i)))
		if err != nil {
			s.T.Fatal(err)
		}
		_, _ = part.Write(f)
	}
	_ = mw.Close()
	header.Set("Content-Type", mw.FormDataContentType())
	return s.DoWith("POST", "/exams/"+examID+"/answer-sheet-scans", key, body.String(), header)
}

// sheets downloads the printable sheets and rasterizes them.
func sheets(s *env, examID, key string, userIDs ...string) []image.Image {
	s.T.Helper()
	q := ""
	for i, id := range userIDs {
		q += map[bool]string{true: "?", false: "&"}[i == 0] + "userId=" + id
	}
	r := s.Do("GET", "/exams/"+examID+"/answer-sheets"+q, key, nil).Must(s.T, 200)
	if ct := r.Header.Get("Content-Type"); ct != "application/pdf" || !bytes.HasPrefix(r.Raw, []byte("%PDF-")) {
		s.T.Fatalf("answer sheets: %s, %.40q", ct, r.Raw)
	}
	var pages []image.Image
	if err := answersheet.SplitPDF(context.Background(), r.Raw, func(_ int, img image.Image) error {
		pages = append(pages, img)
		return nil
	}); err != nil {
		s.T.Fatal(err)
	}
	return pages
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// scannedValues maps question ids to the values read from one sheet.
func scannedValues(sheet map[string]any) map[string]any {
	out := map[string]any{}
	answers, _ := sheet["answers"].([]any)
	for _, a := range answers {
		m := a.(map[string]any)
		out[apptest.Str(m, "questionId")] = m["value"]
	}
	return out
}

func TestAnswerSheetScanning(t *testing.T) {
	t.Parallel()
	s := newScanEnv(t)
	tn := s.NewTenant("US", tenancy.PlanPro)
	teacher := tn.Keys[tenancy.RoleTeacher]
	student := tn.Users[tenancy.RoleStudent]
	a := authorAllTypes(s.env, t, teacher)
	staff := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	exam, questions, err := s.App.Assessment.AnswerSheet(staff, a.exam)
	if err != nil {
		t.Fatal(err)
	}
	qid := a.questions

	other := s.NewTenant("CA", tenancy.PlanPro)

	// The student fills the sheet; one copy is scanned, one photographed
	// at an angle with a phone.
	page := sheets(s.env, a.exam, teacher, student.ID)[0]
	filled := sheettest.Fill(t, exam, questions, page, []sheettest.Mark{
		{QuestionID: qid["multiple_choice"], ChoiceID: "b", Ink: 30},
		{QuestionID: qid["multiple_select"], ChoiceID: "a", Ink: 40}, {QuestionID: qid["multiple_select"], ChoiceID: "b", Ink: 30},
		{QuestionID: qid["true_false"], ChoiceID: "true", Ink: 30},
	})
	sheettest.Write(t, exam, questions, filled, qid["short_text"])
	sheettest.Write(t, exam, questions, filled, qid["essay"])
	scan := upload(s.env, a.exam, teacher, encodePNG(t, filled)).Must(t, 200)
	if !strings.HasPrefix(apptest.Str(scan.Body, "id"), "scn_") || apptest.Str(scan.Body, "status") != "running" {
		t.Fatalf("scan %s", scan.Raw)
	}
	photo := sheettest.PhotoJPEG(t, filled, -4, 1.2, 7)
	s.cdnFiles["/media/photo.jpg"] = photo
	byURL := s.Do("POST", "/exams/"+a.exam+"/answer-sheet-scans", teacher,
		map[string]any{"files": []string{s.cdn.URL + "/media/photo.jpg"}}).Must(t, 200)

	want := map[string]any{
		qid["multiple_choice"]: "b", qid["multiple_select"]: []any{"a", "b"}, qid["true_false"]: true,
		qid["short_text"]: "Light, water and CO2 make sugar.", qid["numeric"]: nil, qid["essay"]: "Light, water and CO2 make sugar.",
	}
	for _, id := range []string{apptest.Str(scan.Body, "id"), apptest.Str(byURL.Body, "id")} {
		done := waitStatus(t, s.env, "/answer-sheet-scans/"+id, teacher, "completed")
		sheets := apptest.Items(done.Body, "sheets")
		if len(sheets) != 1 || apptest.Str(sheets[0], "userId") != student.ID || apptest.Str(done.Body, "region") != "global" {
			t.Fatalf("scan %s", done.Raw)
		}
		if got := scannedValues(sheets[0]); !reflect.DeepEqual(got, want) {
			t.Fatalf("read %v, want %v", got, want)
		}
		res := waitStatus(t, s.env, "/results/"+apptest.Str(sheets[0], "resultId"), teacher, "graded")
		if apptest.Str(res.Body, "source") != "scan" || apptest.Str(res.Body, "userId") != student.ID {
			t.Fatalf("result %s", res.Raw)
		}
		// Multiple choice (2), multiple select (1), true/false (1) and the
		// essay's AI grade (4 of 5); the short text is wrong, the numeric
		// box blank.
		if apptest.Num(res.Body, "score") != 8 {
			t.Fatalf("score %v: %s", res.Body["score"], res.Raw)
		}
	}
	if n := len(s.eu.requests()); n != 0 {
		t.Fatalf("the EU endpoint got %d requests for a global organization", n)
	}

	// A printed PDF of two sheets, scanned untouched, is split into its
	// pages: every bubble row blank and left for review; the second copy
	// of the same student's sheet is reported.
	printed := s.Do("GET", "/exams/"+a.exam+"/answer-sheets?userId="+student.ID+"&userId="+student.ID, teacher, nil).Must(t, 200).Raw
	pdfScan := upload(s.env, a.exam, teacher, printed).Must(t, 200)
	done := waitStatus(t, s.env, "/answer-sheet-scans/"+apptest.Str(pdfScan.Body, "id"), teacher, "completed")
	sheets, errs := apptest.Items(done.Body, "sheets"), apptest.Items(done.Body, "errors")
	if apptest.Num(done.Body, "pages") != 2 || len(sheets) != 2 || len(errs) != 1 || apptest.Str(errs[0], "reason") != "DUPLICATE_SHEET" {
		t.Fatalf("PDF scan %s", done.Raw)
	}
	for _, an := range sheets[0]["answers"].([]any) {
		m := an.(map[string]any)
		switch apptest.Str(m, "questionId") {
		case qid["multiple_choice"], qid["multiple_select"], qid["true_false"]:
			if m["needsReview"] != true || apptest.Str(m, "reason") != "blank" {
				t.Fatalf("an untouched bubble row not left for review: %v", m)
			}
		}
	}

	// The teacher corrects the numeric answer the scan left for review.
	res := waitStatus(t, s.env, "/results/"+apptest.Str(apptest.Items(waitStatus(t, s.env, "/answer-sheet-scans/"+apptest.Str(scan.Body, "id"), teacher, "completed").Body, "sheets")[0], "resultId"), teacher, "graded")
	resultID := apptest.Str(res.Body, "id")
	for _, an := range apptest.Items(res.Body, "answers") {
		if apptest.Str(an, "questionId") == qid["numeric"] && an["needsReview"] != true {
			t.Fatalf("blank numeric box not flagged for review: %v", an)
		}
	}
	fixed := s.Do("PATCH", "/results/"+resultID+"/answers/"+qid["numeric"], teacher, map[string]any{"value": 3.14}).Must(t, 200)
	if apptest.Num(fixed.Body, "score") != apptest.Num(res.Body, "score")+1 {
		t.Fatalf("corrected score %v, was %v", fixed.Body["score"], res.Body["score"])
	}
	s.Do("PATCH", "/results/"+resultID+"/answers/"+qid["numeric"], tn.Keys[tenancy.RoleStudent], map[string]any{"value": 1}).Must(t, 403)
	s.Do("PATCH", "/results/"+resultID+"/answers/"+qid["numeric"], other.Keys[tenancy.RoleTeacher], map[string]any{"value": 1}).Must(t, 404)
	// An answer graded by AI is graded again, on the result's region.
	regrading := s.Do("PATCH", "/results/"+resultID+"/answers/"+qid["essay"], teacher,
		map[string]any{"value": "Plants make sugar from light, water and carbon dioxide."}).Must(t, 200)
	if apptest.Str(regrading.Body, "status") != "grading" {
		t.Fatalf("an AI-graded correction did not put the result back to grading: %s", regrading.Raw)
	}
	regraded := waitStatus(t, s.env, "/results/"+resultID, teacher, "graded")
	for _, an := range apptest.Items(regraded.Body, "answers") {
		if apptest.Str(an, "questionId") == qid["essay"] && (apptest.Str(an, "status") != "graded" || an["value"] != "Plants make sugar from light, water and carbon dioxide.") {
			t.Fatalf("corrected essay answer %v", an)
		}
	}
	audit := s.Do("GET", "/audit-logs?action=result.answer_corrected", tn.Keys[tenancy.RoleOwner], nil).Must(t, 200)
	if len(apptest.Items(audit.Body, "auditLogs")) != 2 {
		t.Fatalf("audit %s", audit.Raw)
	}

}

func TestAnswerSheetScanOfAnEUOrganizationStaysInTheEU(t *testing.T) {
	t.Parallel()
	s := newScanEnv(t)
	tn := s.NewTenant("DE", tenancy.PlanPro)
	teacher := tn.Keys[tenancy.RoleTeacher]
	s.Do("PATCH", "/org", tn.Keys[tenancy.RoleOwner], `{"settings":{"aiRegion":"eu"}}`).Must(t, 200)
	a := authorAllTypes(s.env, t, teacher)
	staff := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	exam, questions, err := s.App.Assessment.AnswerSheet(staff, a.exam)
	if err != nil {
		t.Fatal(err)
	}
	page := sheets(s.env, a.exam, teacher, tn.Users[tenancy.RoleStudent].ID)[0]
	filled := sheettest.Fill(t, exam, questions, page, nil)
	sheettest.Write(t, exam, questions, filled, a.questions["essay"])
	scan := upload(s.env, a.exam, teacher, encodePNG(t, filled)).Must(t, 200)
	done := waitStatus(t, s.env, "/answer-sheet-scans/"+apptest.Str(scan.Body, "id"), teacher, "completed")
	if apptest.Str(done.Body, "region") != "eu" {
		t.Fatalf("scan %s", done.Raw)
	}
	waitStatus(t, s.env, "/results/"+apptest.Str(apptest.Items(done.Body, "sheets")[0], "resultId"), teacher, "graded")
	eu := s.eu.requests()
	if len(eu) == 0 || !strings.Contains(strings.Join(eu, ""), `"name":"transcription"`) {
		t.Fatalf("the EU endpoint got %d requests, none a transcription", len(eu))
	}
	if n := len(s.global.requests()); n != 0 {
		t.Fatalf("the global endpoint got %d requests for an EU organization's scan", n)
	}
}

func TestAnswerSheetsAndUploadChecks(t *testing.T) {
	cdn := "https://cdn.example.test/media/"
	e := apptest.NewWithConfig(t, func(c *app.Config) { c.MediaCDN = []string{cdn} })
	tn := e.NewTenant("US", tenancy.PlanPro)
	teacher := tn.Keys[tenancy.RoleTeacher]
	other := e.NewTenant("CA", tenancy.PlanPro)
	a := authorAllTypes(e, t, teacher)

	// Sheets are printed for students of the organization only.
	if blank := sheets(e, a.exam, teacher); len(blank) != 1 {
		t.Fatalf("a sheet with a name box has %d pages", len(blank))
	}
	if two := sheets(e, a.exam, teacher, tn.Users[tenancy.RoleStudent].ID, tn.Users[tenancy.RoleStudent].ID); len(two) != 2 {
		t.Fatalf("two sheets have %d pages", len(two))
	}
	for _, tc := range []struct {
		query, key string
		status     int
	}{
		{"?userId=" + tn.Users[tenancy.RoleTeacher].ID, teacher, 400},
		{"?userId=usr_nonsense", teacher, 400},
		{"?userId=" + other.Users[tenancy.RoleStudent].ID, teacher, 400},
		{"", tn.Keys[tenancy.RoleStudent], 403},
		{"", other.Keys[tenancy.RoleTeacher], 404},
	} {
		e.Do("GET", "/exams/"+a.exam+"/answer-sheets"+tc.query, tc.key, nil).Must(t, tc.status)
	}

	blank := image.NewGray(image.Rect(0, 0, 1240, 1754))
	huge := make([]byte, answersheet.MaxUploadBytes+1)
	copy(huge, "\x89PNG\r\n\x1a\n")
	for _, tc := range []struct {
		name   string
		r      func() response
		status int
	}{
		{"not an image", func() response { return upload(e, a.exam, teacher, []byte("hello, not a picture")) }, 400},
		{"a PNG cut off in its header", func() response { return upload(e, a.exam, teacher, encodePNG(t, blank)[:20]) }, 400},
		{"a damaged PDF", func() response { return upload(e, a.exam, teacher, []byte("%PDF-1.4 garbage")) }, 400},
		{"too large", func() response { return upload(e, a.exam, teacher, huge) }, 413},
		{"no file", func() response { return upload(e, a.exam, teacher) }, 400},
		{"a URL off the CDN", func() response {
			return e.Do("POST", "/exams/"+a.exam+"/answer-sheet-scans", teacher, map[string]any{"files": []string{"https://example.com/a.png"}})
		}, 400},
		{"an unknown field", func() response {
			return e.Do("POST", "/exams/"+a.exam+"/answer-sheet-scans", teacher, map[string]any{"files": []string{cdn + "a.png"}, "x": 1})
		}, 400},
		{"a student", func() response { return upload(e, a.exam, tn.Keys[tenancy.RoleStudent], encodePNG(t, blank)) }, 403},
		{"a foreign exam", func() response { return upload(e, a.exam, other.Keys[tenancy.RoleTeacher], encodePNG(t, blank)) }, 404},
		{"a foreign scan", func() response {
			return e.Do("GET", "/answer-sheet-scans/scn_01JB0000000000000000000000", teacher, nil)
		}, 404},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.r().Must(t, tc.status) })
	}

	// Accepted scans wait for their workflow (none runs here).
	var running string
	for _, r := range []response{
		upload(e, a.exam, teacher, encodePNG(t, blank)).Must(t, 200),
		e.Do("POST", "/exams/"+a.exam+"/answer-sheet-scans", teacher, map[string]any{"files": []string{cdn + "a.png"}}).Must(t, 200),
	} {
		got := e.Do("GET", "/answer-sheet-scans/"+apptest.Str(r.Body, "id"), teacher, nil).Must(t, 200)
		if apptest.Str(got.Body, "status") != "running" || apptest.Str(got.Body, "region") != "global" || apptest.Str(got.Body, "examId") != a.exam {
			t.Fatalf("scan %s", got.Raw)
		}
		e.Do("GET", "/answer-sheet-scans/"+apptest.Str(r.Body, "id"), other.Keys[tenancy.RoleTeacher], nil).Must(t, 404)
		running = apptest.Str(r.Body, "id")
	}

	// Without poppler-utils a PDF is the deployment's fault, not the
	// uploader's: 503, and images still go through.
	pdf := e.Do("GET", "/exams/"+a.exam+"/answer-sheets", teacher, nil).Must(t, 200).Raw
	t.Setenv("PATH", t.TempDir())
	if r := upload(e, a.exam, teacher, pdf).Must(t, 503); r.Reason() != "PDF_TOOL_MISSING" {
		t.Fatalf("PDF without poppler: %s", r.Raw)
	}
	upload(e, a.exam, teacher, encodePNG(t, blank)).Must(t, 200)

	// The exam is deleted while a scan of it runs: finishing the scan
	// learns that it is gone, which its workflow does not retry.
	e.Do("DELETE", "/exams/"+a.exam, teacher, nil).Must(t, 200)
	scans := scanning.NewService(e.DB, e.App.Assessment, e.App.Tenancy, nil)
	_, err := scans.Finish(store.WithOrg(context.Background(), tn.Org.ID), running, nil)
	if err := workflows.PermanentIfGone(err, "the scan"); !workflows.IsPermanent(err) || !strings.Contains(err.Error(), "the scan was deleted") {
		t.Fatalf("finishing a scan of a deleted exam: %v", err)
	}
}

func TestUnreadableAnswerSheetPagesAreReported(t *testing.T) {
	t.Parallel()
	s := newScanEnv(t)
	tn := s.NewTenant("US", tenancy.PlanPro)
	teacher := tn.Keys[tenancy.RoleTeacher]
	a := authorAllTypes(s.env, t, teacher)
	blank := image.NewGray(image.Rect(0, 0, 1240, 1754))
	for i := range blank.Pix {
		blank.Pix[i] = 255
	}
	// Pages that are not answer sheets (blank paper, a sheet with its QR
	// code covered, a PNG whose pixels are cut off) are reported per page,
	// never attributed; a file missing from the CDN is reported per file.
	exam, questions, err := s.App.Assessment.AnswerSheet(tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID)), a.exam)
	if err != nil {
		t.Fatal(err)
	}
	covered := sheettest.Fill(t, exam, questions, sheets(s.env, a.exam, teacher, tn.Users[tenancy.RoleStudent].ID)[0], nil)
	scale := float64(covered.Bounds().Dx()) / 210
	draw.Draw(covered, image.Rect(int(160*scale), int(17*scale), int(197*scale), int(53*scale)), image.White, image.Point{}, draw.Src)
	scan := upload(s.env, a.exam, teacher, encodePNG(t, blank), encodePNG(t, covered), encodePNG(t, blank)[:300]).Must(t, 200)
	missing := s.Do("POST", "/exams/"+a.exam+"/answer-sheet-scans", teacher,
		map[string]any{"files": []string{s.cdn.URL + "/media/missing.png"}}).Must(t, 200)
	for id, want := range map[string][]string{
		apptest.Str(scan.Body, "id"):    {"1:NO_CORNER_MARKS", "2:NO_QR_CODE", "3:UNREADABLE_FILE"},
		apptest.Str(missing.Body, "id"): {"0:FILE_NOT_FOUND"},
	} {
		done := waitStatus(t, s.env, "/answer-sheet-scans/"+id, teacher, "completed")
		var got []string
		for _, e := range apptest.Items(done.Body, "errors") {
			got = append(got, fmt.Sprintf("%v:%s", e["page"], apptest.Str(e, "reason")))
		}
		if len(apptest.Items(done.Body, "sheets")) != 0 || !reflect.DeepEqual(got, want) {
			t.Fatalf("errors %v, want %v: %s", got, want, done.Raw)
		}
	}
	results := s.Do("GET", "/exams/"+a.exam+"/results", teacher, nil).Must(t, 200)
	if n := len(apptest.Items(results.Body, "results")); n != 0 {
		t.Fatalf("%d results from unreadable pages", n)
	}
}

func TestAMultiPageSheetBecomesOneResult(t *testing.T) {
	t.Parallel()
	s := newScanEnv(t)
	tn := s.NewTenant("US", tenancy.PlanPro)
	teacher := tn.Keys[tenancy.RoleTeacher]
	student := tn.Users[tenancy.RoleStudent]
	staff := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	examID := apptest.Str(s.Do("POST", "/exams", teacher, map[string]any{"name": "Long quiz", "language": "en"}).Must(t, 200).Body, "id")
	var qids []string
	for i := range 25 {
		q := s.Do("POST", "/exams/"+examID+"/questions", teacher, map[string]any{"type": "true_false",
			"prompt": fmt.Sprintf("Statement %d is true.", i+1), "config": map[string]any{"correct": true}}).Must(t, 200)
		qids = append(qids, apptest.Str(q.Body, "id"))
	}
	exam, questions, err := s.App.Assessment.AnswerSheet(staff, examID)
	if err != nil {
		t.Fatal(err)
	}
	pages := sheets(s.env, examID, teacher, student.ID)
	if len(pages) != 2 {
		t.Fatalf("25 rows printed on %d pages, want 2", len(pages))
	}
	first := sheettest.Fill(t, exam, questions, pages[0], []sheettest.Mark{{QuestionID: qids[0], ChoiceID: "true", Ink: 30}})
	second := sheettest.Fill(t, exam, questions, pages[1], []sheettest.Mark{{QuestionID: qids[24], ChoiceID: "false", Ink: 30}})
	// The second page comes first: pages are put together by the sheet
	// page their QR code names.
	scan := upload(s.env, examID, teacher, encodePNG(t, second), encodePNG(t, first)).Must(t, 200)
	done := waitStatus(t, s.env, "/answer-sheet-scans/"+apptest.Str(scan.Body, "id"), teacher, "completed")
	sheets := apptest.Items(done.Body, "sheets")
	if len(sheets) != 2 || apptest.Num(sheets[0], "sheetPage") != 2 || apptest.Str(sheets[0], "resultId") == "" || apptest.Str(sheets[0], "resultId") != apptest.Str(sheets[1], "resultId") {
		t.Fatalf("scan %s", done.Raw)
	}
	res := waitStatus(t, s.env, "/results/"+apptest.Str(sheets[0], "resultId"), teacher, "graded")
	answers := apptest.Items(res.Body, "answers")
	if len(answers) != 25 || answers[0]["value"] != true || answers[24]["value"] != false || apptest.Num(res.Body, "score") != 1 {
		t.Fatalf("result %s", res.Raw)
	}
}

// scanCDN is the media CDN of newURLScan.
const scanCDN = "https://cdn.assessd.test/media/"

// newScanSchool starts assessd without workers, with scanCDN as its media
// CDN, and a school with an exam, for tests that run the scanning steps
// themselves; it returns a teacher's key and the exam.
func newScanSchool(t *testing.T) (e *env, tn tenant, teacher, examID string) {
	e = apptest.NewWithConfig(t, func(c *app.Config) { c.MediaCDN = []string{scanCDN} })
	tn = e.NewTenant("US", tenancy.PlanPro)
	teacher = tn.Keys[tenancy.RoleTeacher]
	return e, tn, teacher, authorAllTypes(e, t, teacher).exam
}

// newURLScan is newScanSchool with a scan of files named on scanCDN.
func newURLScan(t *testing.T, names ...string) (*env, tenant, string) {
	e, tn, teacher, exam := newScanSchool(t)
	urls := make([]string, len(names))
	for i, name := range names {
		urls[i] = scanCDN + name
	}
	scan := e.Do("POST", "/exams/"+exam+"/answer-sheet-scans", teacher, map[string]any{"files": urls}).Must(t, 200)
	return e, tn, apptest.Str(scan.Body, "id")
}

// TestSplitStoresPagesOverAFailedAttempt: a file's pages are stored as
// they are rasterized, numbered after the earlier files' pages; a page a
// failed attempt left is stored over, not added to.
func TestSplitStoresPagesOverAFailedAttempt(t *testing.T) {
	t.Parallel()
	e, tn, scanID := newURLScan(t, "a.png", "b.png")
	ctx := store.WithOrg(context.Background(), tn.Org.ID)
	// An attempt that stored the second file's first page, then failed.
	if _, err := e.DB.Q(ctx).Exec(ctx, `INSERT INTO answer_sheet_scan_pages (scan_id, page, org_id, file, file_page, image)
		VALUES ($1, 2, app_org_id(), 2, 1, 'stale')`, scanID); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for i, name := range []string{"a.png", "b.png"} {
		img := image.NewGray(image.Rect(0, 0, 1240, 1754))
		for j := range img.Pix {
			img.Pix[j] = byte(200 + i)
		}
		files[scanCDN+name] = encodePNG(t, img)
	}
	svc := scanning.NewService(e.DB, e.App.Assessment, e.App.Tenancy, func(string) bool { return true })
	pages, err := svc.Split(ctx, scanID, func(_ context.Context, url string) ([]byte, error) { return files[url], nil })
	if err != nil || !reflect.DeepEqual(pages, []int{1, 2}) {
		t.Fatalf("pages %v, %v; want [1 2]", pages, err)
	}
	for page, want := range map[int]string{1: scanCDN + "a.png", 2: scanCDN + "b.png"} {
		var image []byte
		if err := e.DB.Q(ctx).QueryRow(ctx, `SELECT image FROM answer_sheet_scan_pages WHERE scan_id = $1 AND page = $2`, scanID, page).Scan(&image); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(image, files[want]) {
			t.Errorf("page %d holds %d bytes, not %s", page, len(image), want)
		}
	}
}

// countedPageImages counts the page images a scanning activity loads.
type countedPageImages struct {
	*scanning.Service
	loaded atomic.Int32
}

func (c *countedPageImages) PageImage(ctx context.Context, scanID string, page int) (scanning.PageToRead, error) {
	c.loaded.Add(1)
	return c.Service.PageImage(ctx, scanID, page)
}

// A page's reading waits for the memory its image takes to decode in the
// worker's budget before it loads the image (decision 0174): the split
// stores the figure, and a page split before it was kept counts as the
// most a page may take.
func TestPageReadingWaitsForItsMemory(t *testing.T) {
	t.Parallel()
	e, tn, scanID := newURLScan(t, "a.jpg")
	ctx := store.WithOrg(context.Background(), tn.Org.ID)
	var file bytes.Buffer
	if err := jpeg.Encode(&file, image.NewGray(image.Rect(0, 0, 1240, 1754)), nil); err != nil {
		t.Fatal(err)
	}
	svc := &countedPageImages{Service: scanning.NewService(e.DB, e.App.Assessment, e.App.Tenancy, func(string) bool { return true })}
	if _, err := svc.Split(ctx, scanID, func(context.Context, string) ([]byte, error) { return file.Bytes(), nil }); err != nil {
		t.Fatal(err)
	}
	want, err := answersheet.PageMemory(file.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if memory, read, err := svc.PageMemory(ctx, scanID, 1); memory != want || read || err != nil {
		t.Fatalf("page memory %d, read %v, %v; want %d", memory, read, err, want)
	}

	budget := membudget.New(want)
	held, err := budget.Acquire(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	acts := &scanningactivities.Activities{Scans: svc, Region: tn.Org.AIRegion, Memory: budget,
		Metrics: scanningactivities.NewMetrics(nil, func(s string) string { return s })}
	done := startActivity(acts.ReadPage, scanningworkflow.PageInput{OrgID: tn.Org.ID, ScanID: scanID, Page: 1, Region: tn.Org.AIRegion})
	time.Sleep(300 * time.Millisecond)
	if n := svc.loaded.Load(); n != 0 {
		t.Fatalf("the image was loaded %d times while the budget was held", n)
	}
	budget.Release(held)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, read, err := svc.PageMemory(ctx, scanID, 1); !read || err != nil || svc.loaded.Load() != 1 {
		t.Fatalf("page read %v (%v) after %d loads", read, err, svc.loaded.Load())
	}
	if _, err := budget.Acquire(ctx, want); err != nil { // all given back
		t.Fatal(err)
	}

	if _, err := e.DB.Q(ctx).Exec(ctx, `UPDATE answer_sheet_scan_pages SET read_memory = NULL, read = false WHERE scan_id = $1`, scanID); err != nil {
		t.Fatal(err)
	}
	if memory, _, err := svc.PageMemory(ctx, scanID, 1); memory != answersheet.MaxPageMemory || err != nil {
		t.Errorf("a page without its figure: %d, %v; want %d", memory, err, answersheet.MaxPageMemory)
	}
}

// startActivity runs an activity in the SDK's test environment in the
// background and returns its error's channel.
func startActivity(activity, input any) <-chan error {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(activity)
	done := make(chan error, 1)
	go func() {
		_, err := env.ExecuteActivity(activity, input)
		done <- err
	}()
	return done
}

// A split waits for its file's memory in the worker's budget before it
// loads the file (decision 0174).
func TestSplitWaitsForItsMemory(t *testing.T) {
	t.Parallel()
	e, tn, teacher, exam := newScanSchool(t)
	scanID := apptest.Str(upload(e, exam, teacher, encodePNG(t, image.NewGray(image.Rect(0, 0, 620, 877)))).Must(t, 200).Body, "id")
	ctx := store.WithOrg(context.Background(), tn.Org.ID)
	pages := func() (n int) {
		if err := e.DB.Q(ctx).QueryRow(ctx, `SELECT count(*) FROM answer_sheet_scan_pages WHERE scan_id = $1`, scanID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	budget := membudget.New(answersheet.SplitMemory)
	held, err := budget.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	acts := &scanningactivities.Activities{Scans: scanning.NewService(e.DB, e.App.Assessment, e.App.Tenancy, func(string) bool { return true }),
		Region: tn.Org.AIRegion, Memory: budget}
	done := startActivity(acts.SplitScan, scanningworkflow.Input{OrgID: tn.Org.ID, ScanID: scanID, Region: tn.Org.AIRegion})
	time.Sleep(300 * time.Millisecond)
	if n := pages(); n != 0 {
		t.Fatalf("%d pages split while the budget lacked a byte", n)
	}
	budget.Release(held)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := pages(); n != 1 {
		t.Fatalf("%d pages split, want 1", n)
	}
	if _, err := budget.Acquire(ctx, budget.Size()); err != nil { // all given back
		t.Fatal(err)
	}
}

// examDeletedAfterImage is the scans store with a page's exam deleted
// just after the page's image was loaded: the reading is under way.
type examDeletedAfterImage struct {
	*scanning.Service
	deleteExam func() error
}

func (s examDeletedAfterImage) PageImage(ctx context.Context, scanID string, page int) (scanning.PageToRead, error) {
	p, err := s.Service.PageImage(ctx, scanID, page)
	if err == nil {
		err = s.deleteExam()
	}
	return p, err
}

// A page whose exam is deleted while it is read fails for good at once:
// its retries could only meet the deleted exam again.
func TestAPageReadAsItsExamIsDeletedIsNotRetried(t *testing.T) {
	t.Parallel()
	e, tn, teacher, exam := newScanSchool(t)
	scanID := apptest.Str(upload(e, exam, teacher, encodePNG(t, image.NewGray(image.Rect(0, 0, 620, 877)))).Must(t, 200).Body, "id")
	ctx := store.WithOrg(context.Background(), tn.Org.ID)
	svc := examDeletedAfterImage{Service: scanning.NewService(e.DB, e.App.Assessment, e.App.Tenancy, nil), deleteExam: func() error {
		if r := e.Do("DELETE", "/exams/"+exam, teacher, nil); r.Status != http.StatusOK {
			return fmt.Errorf("delete the exam: %d %s", r.Status, r.Raw)
		}
		return nil
	}}
	if pages, err := svc.Split(ctx, scanID, nil); err != nil || len(pages) != 1 {
		t.Fatalf("pages %v, %v", pages, err)
	}
	acts := &scanningactivities.Activities{Scans: svc, Region: tn.Org.AIRegion,
		Metrics: scanningactivities.NewMetrics(nil, func(s string) string { return s })}
	err := <-startActivity(acts.ReadPage, scanningworkflow.PageInput{OrgID: tn.Org.ID, ScanID: scanID, Page: 1, Region: tn.Org.AIRegion})
	if !workflows.IsPermanent(err) || !strings.Contains(err.Error(), "the exam was deleted") {
		t.Fatalf("reading a page as its exam is deleted: %v", err)
	}
}
