package embedflow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/web"
)

// Uploads stores the files of file answers and names them by URLs on the
// media CDN (media.Files, decision 0121).
type Uploads interface {
	Put(ctx context.Context, field, name string, data []byte) (string, error)
	// Discard deletes a file taken out of the draft before anything named it.
	Discard(ctx context.Context, fileURL string) error
	MaxBytes() int64
	PendingBytes() int64
}

// maxFilesPerAnswer bounds a file answer whose question sets no maxFiles
// (the question type's own maximum).
const maxFilesPerAnswer = 10

// filesView is one file question's upload control and list.
type filesView struct {
	view
	Q     assessment.SheetQuestion
	Files []string
	// MaxBytes is the size limit as people read it ("10 MiB").
	MaxBytes string
	// Swapped marks the list answered to an upload or removal: its file
	// input takes the focus the replaced button had.
	Swapped bool
	// removed are the files taken out of the list, deleted once the answers
	// without them are kept.
	removed []string
}

// Name is the file name at the end of a file URL.
func (filesView) Name(fileURL string) string { return fileURL[strings.LastIndex(fileURL, "/")+1:] }

// Accept is the file input's accept attribute.
func (v filesView) Accept() string { return strings.Join(v.Q.AcceptedTypes, ",") }

// Max is how many files the answer takes.
func (v filesView) Max() int { return maxFiles(v.Q) }

func maxFiles(q assessment.SheetQuestion) int {
	if q.MaxFiles > 0 {
		return q.MaxFiles
	}
	return maxFilesPerAnswer
}

// FilesOf is a file question's view within the exam page.
func (v examView) FilesOf(q assessment.SheetQuestion) filesView {
	return filesView{view: v.view, Q: q, Files: v.Answers[q.ID+".files"], MaxBytes: media.Size(v.maxBytes)}
}

func (s *Service) fileRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /embed/{id}/files/{question}", s.uploadFile)
	mux.HandleFunc("POST /embed/{id}/files/{question}/remove", s.removeFile)
}

// uploadFile stores one file (a multipart part named "file") of a file
// question's answer and adds its URL to the saved answers; htmx swaps in the
// updated list, and without JavaScript the exam page is shown again.
func (s *Service) uploadFile(w http.ResponseWriter, r *http.Request) {
	// The whole request: the file at its limit and room for the form.
	r.Body = http.MaxBytesReader(w, r.Body, s.Files.MaxBytes()+64<<10)
	s.changeFiles(w, r, func(ctx context.Context, v *filesView) string {
		if len(v.Files) >= maxFiles(v.Q) {
			return fmt.Sprintf("%s %d.", v.T("embed.student.fileCount"), maxFiles(v.Q))
		}
		part, header, err := r.FormFile("file")
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return v.T("embed.student.fileTooLarge") + " " + v.MaxBytes + "."
		case err != nil:
			return v.T("embed.student.fileMissing")
		}
		defer func() { _ = part.Close() }()
		data, err := io.ReadAll(io.LimitReader(part, s.Files.MaxBytes()+1))
		if err != nil || len(data) == 0 {
			return v.T("embed.student.fileMissing")
		}
		if int64(len(data)) > s.Files.MaxBytes() {
			return v.T("embed.student.fileTooLarge") + " " + v.MaxBytes + "."
		}
		if ct, ok := media.Sniff(data); !ok || !media.Accepts(v.Q.AcceptedTypes, ct) {
			accepted := v.T("embed.student.fileTypesAll")
			if len(v.Q.AcceptedTypes) > 0 {
				accepted = strings.Join(v.Q.AcceptedTypes, ", ")
			}
			return v.T("embed.student.fileType") + " " + accepted + "."
		}
		fileURL, err := s.Files.Put(ctx, "file", header.Filename, data)
		if e, ok := errs.As(err); ok && e.Reason == media.ReasonPendingFull {
			return v.T("embed.student.filesPending") + " " + media.Size(s.Files.PendingBytes()) + "."
		}
		if err != nil {
			return pageError(r.Context(), err)
		}
		v.Files = append(v.Files, fileURL)
		return ""
	})
}

// removeFile takes the file "url" out of a file question's answer.
func (s *Service) removeFile(w http.ResponseWriter, r *http.Request) {
	s.changeFiles(w, r, func(_ context.Context, v *filesView) string {
		removed := r.PostFormValue("url")
		if slices.Contains(v.Files, removed) {
			v.Files = slices.DeleteFunc(v.Files, func(f string) bool { return f == removed })
			v.removed = append(v.removed, removed)
		}
		return ""
	})
}

// changeFiles runs change, acting as the session's actor, on the files of the session's question
// {question}, keeps the answers unless change answers an error message,
// and answers the list (htmx) or the exam page.
func (s *Service) changeFiles(w http.ResponseWriter, r *http.Request, change func(context.Context, *filesView) string) {
	sess, ctx, sheet, ok := s.unsubmittedSheet(w, r)
	if !ok {
		return
	}
	questions, answers := sheet.questions, sheet.answers
	i := slices.IndexFunc(questions, func(q assessment.SheetQuestion) bool {
		return q.ID == r.PathValue("question") && q.Type == assessment.TypeFileUpload
	})
	if i < 0 {
		http.Error(w, "this exam has no such file question", http.StatusNotFound)
		return
	}
	field := questions[i].ID + ".files"
	v := filesView{view: view{Session: sess}, Q: questions[i], Files: answers[field], MaxBytes: media.Size(s.Files.MaxBytes()), Swapped: true}
	v.Error = change(ctx, &v)
	if v.Error == "" {
		if answers == nil {
			answers = map[string][]string{}
		}
		answers[field] = v.Files
		if len(v.Files) == 0 {
			delete(answers, field)
		}
		var refused refusal
		if err := sheet.keep(ctx, answers); errors.Is(err, errTooLong) {
			v.Error = v.T("embed.student.tooLong")
		} else if errors.As(err, &refused) {
			v.Error = v.T(refused.key)
		} else if err != nil {
			v.Error = pageError(r.Context(), err)
		}
	}
	if v.Error == "" {
		for _, f := range v.removed {
			if err := s.Files.Discard(ctx, f); err != nil {
				// The sweep deletes it within a week (decision 0155).
				slog.WarnContext(ctx, "embed: a removed file could not be deleted", "err", err)
			}
		}
	}
	if r.Header.Get("HX-Request") == "true" {
		status := http.StatusOK
		if v.Error != "" {
			// htmx swaps 422 (embed-head's responseHandling): the list
			// shows the error.
			status = http.StatusUnprocessableEntity
		}
		web.RenderFramed(w, r, status, "embed-files.html", v, sess.AllowedOrigins)
		return
	}
	if v.Error != "" {
		s.studentExam(w, r, sess, v.Error)
		return
	}
	to := "/embed/" + sess.ID
	if sess.Presets["layout"] == "paged" {
		to += "?q=" + strconv.Itoa(i+1)
	}
	http.Redirect(w, r, to+"#files-"+questions[i].ID, http.StatusSeeOther) //nolint:gosec // G710: a path of our own, the session's and question's stored ids
}
