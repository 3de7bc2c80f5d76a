package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"mime/multipart"
	"net/http"
	"time"

	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/testkit/benchload"
	"github.com/assessd/assessd/tenancy"
)

// benchScanning measures answer-sheet scanning with the builtin provider:
// the mark-recognition step alone (ReadPage on rasterized pages, in this
// process) against a scan end to end (one PDF of n sheets uploaded through
// the API, split, read page by page on the worker, results submitted and
// scored), in pages per second; profile, when set, names the file for a CPU
// profile of the latter.
func benchScanning(ctx context.Context, a *app.App, base, orgID, key string, n int, profile string) error {
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(orgID))
	examID, err := seedSheetExam(sys, a)
	if err != nil {
		return err
	}
	query := ""
	for i := range n {
		s, err := a.Tenancy.CreateUser(sys, tenancy.NewUser{Email: fmt.Sprintf("s%d@scan.test", i), Name: fmt.Sprintf("Student %d", i), Role: tenancy.RoleStudent})
		if err != nil {
			return err
		}
		query += map[bool]string{true: "?", false: "&"}[i == 0] + "userId=" + s.ID
	}
	pdf, err := call(http.MethodGet, base+"/exams/"+examID+"/answer-sheets"+query, key, "", nil)
	if err != nil {
		return err
	}
	var pages []image.Image
	if err := answersheet.SplitPDF(ctx, pdf, func(_ int, img image.Image) error {
		pages = append(pages, img)
		return nil
	}); err != nil {
		return err
	}
	exam, questions, err := a.Assessment.AnswerSheet(sys, examID)
	if err != nil {
		return err
	}
	reader, err := answersheet.NewReader(exam, questions)
	if err != nil {
		return err
	}
	start := time.Now()
	for _, p := range pages {
		if _, err := reader.ReadPage(p); err != nil {
			return fmt.Errorf("read page: %w", err)
		}
	}
	omr := float64(len(pages)) / time.Since(start).Seconds()

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", "sheets.pdf")
	_, _ = part.Write(pdf)
	_ = mw.Close()
	if profile != "" {
		stop, err := benchload.StartCPUProfile(profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	start = time.Now()
	created, err := call(http.MethodPost, base+"/exams/"+examID+"/answer-sheet-scans", key, mw.FormDataContentType(), &body)
	if err != nil {
		return err
	}
	var scan struct {
		ID, Status string
		Sheets     []struct{ ResultID string }
	}
	if err := json.Unmarshal(created, &scan); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for scan.Status == "running" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		got, err := call(http.MethodGet, base+"/answer-sheet-scans/"+scan.ID, key, "", nil)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(got, &scan); err != nil {
			return err
		}
	}
	if scan.Status != "completed" || len(scan.Sheets) != n {
		return fmt.Errorf("scan %s with %d of %d sheets", scan.Status, len(scan.Sheets), n)
	}
	end := float64(n) / time.Since(start).Seconds()
	fmt.Printf("\nanswer-sheet scanning: one PDF of %d sheets uploaded, builtin provider, one global worker\n\n", n)
	fmt.Printf("%-40s %10s\n", "target", "pages/s")
	fmt.Printf("%-40s %10.1f\n", "mark recognition alone (baseline)", omr)
	fmt.Printf("%-40s %10.1f\n", "scan end to end (upload to results)", end)
	fmt.Printf("\nratio end to end/mark recognition: %.2f\n", end/omr)
	return nil
}

// seedSheetExam creates an exam of every kind a sheet holds: bubble rows
// and a written box.
func seedSheetExam(ctx context.Context, a *app.App) (string, error) {
	exam, err := a.Assessment.CreateExam(ctx, assessment.NewExam{Name: "Scanned quiz", Language: "en"})
	if err != nil {
		return "", err
	}
	options := []any{map[string]any{"id": "a", "text": "3"}, map[string]any{"id": "b", "text": "4", "correct": true}, map[string]any{"id": "c", "text": "5"}}
	for _, q := range []assessment.NewQuestion{
		{Type: assessment.TypeMultipleChoice, Prompt: "What is 2 + 2?", Points: 1, Config: map[string]any{"options": options}},
		{Type: assessment.TypeMultipleChoice, Prompt: "What is 8 / 2?", Points: 1, Config: map[string]any{"options": options}},
		{Type: assessment.TypeMultipleSelect, Prompt: "Which are even?", Points: 1, Config: map[string]any{"options": options}},
		{Type: assessment.TypeTrueFalse, Prompt: "The earth orbits the sun.", Points: 1, Config: map[string]any{"correct": true}},
		{Type: assessment.TypeShortText, Prompt: "Capital of France?", Points: 1, Config: map[string]any{"acceptedAnswers": []any{"Paris"}}},
	} {
		if _, err := a.Assessment.CreateQuestion(ctx, exam.ID, q); err != nil {
			return "", err
		}
	}
	return exam.ID, nil
}

// call sends one API request and returns its body, or an error for a
// status other than 200.
func call(method, url, key, contentType string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = errors.New(method + " " + url + ": " + res.Status + " " + string(b))
	}
	return b, err
}
