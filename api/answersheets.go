package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/scanning"
)

type answerSheetServer struct {
	scans   *scanning.Service
	results *assessment.Service
}

var _ assessdv1connect.AnswerSheetServiceHandler = answerSheetServer{}

func (s answerSheetServer) GetAnswerSheets(ctx context.Context, req *connect.Request[v1.GetAnswerSheetsRequest]) (*connect.Response[httpbody.HttpBody], error) {
	pdf, err := s.scans.Sheets(ctx, req.Msg.ExamId, req.Msg.UserId)
	return reply(ctx, pdf, err, func(pdf []byte) *httpbody.HttpBody {
		return &httpbody.HttpBody{ContentType: "application/pdf", Data: pdf}
	})
}

func (s answerSheetServer) CreateAnswerSheetScan(ctx context.Context, req *connect.Request[v1.CreateAnswerSheetScanRequest]) (*connect.Response[v1.AnswerSheetScan], error) {
	files := make([]scanning.File, len(req.Msg.Files))
	for i, u := range req.Msg.Files {
		files[i] = scanning.File{URL: u}
	}
	sc, err := s.scans.Create(ctx, req.Msg.ExamId, files)
	return reply(ctx, sc, err, scanToProto)
}

func (s answerSheetServer) GetAnswerSheetScan(ctx context.Context, req *connect.Request[v1.GetAnswerSheetScanRequest]) (*connect.Response[v1.AnswerSheetScan], error) {
	sc, err := s.scans.Get(ctx, req.Msg.Id)
	return reply(ctx, sc, err, scanToProto)
}

func (s answerSheetServer) CorrectResultAnswer(ctx context.Context, req *connect.Request[v1.CorrectResultAnswerRequest]) (*connect.Response[v1.Result], error) {
	r, err := s.results.CorrectAnswer(ctx, req.Msg.ResultId, req.Msg.QuestionId, req.Msg.GetValue().AsInterface())
	return reply(ctx, r, err, resultToProto)
}

func scanToProto(sc scanning.Scan) *v1.AnswerSheetScan {
	out := &v1.AnswerSheetScan{
		Id: sc.ID, ExamId: sc.ExamID, Status: sc.Status, Region: sc.Region, Error: sc.Error,
		Pages: int32(sc.Pages), PagesRead: int32(sc.PagesRead), CreatedAt: ts(sc.CreatedAt), UpdatedAt: ts(sc.UpdatedAt),
		Sheets: make([]*v1.ScannedSheet, len(sc.Sheets)), Errors: make([]*v1.ScanError, len(sc.Errors)),
	}
	for i, sh := range sc.Sheets {
		p := &v1.ScannedSheet{Page: int32(sh.Page), UserId: sh.UserID, ResultId: sh.ResultID, SheetPage: int32(sh.SheetPage)}
		for _, a := range sh.Answers {
			v, err := structpb.NewValue(a.Value)
			if err != nil {
				v = structpb.NewNullValue()
			}
			p.Answers = append(p.Answers, &v1.ScannedAnswer{QuestionId: a.QuestionID, Value: v, Confidence: a.Confidence,
				NeedsReview: a.NeedsReview, Reason: a.Reason})
		}
		out.Sheets[i] = p
	}
	for i, e := range sc.Errors {
		out.Errors[i] = &v1.ScanError{Page: int32(e.Page), File: int32(e.File), Reason: e.Reason, Message: e.Message}
	}
	return out
}

// maxUploadRequest bounds a whole multipart scan request: every file at
// its limit, with room for the parts' headers.
const maxUploadRequest = scanning.MaxFiles*answersheet.MaxUploadBytes + 1<<20

// ScanUploads serves multipart/form-data uploads to POST
// /exams/{examId}/answer-sheet-scans: parts named file, each a PNG, JPEG or
// PDF of at most 20 MiB. It answers like CreateAnswerSheetScan.
func ScanUploads(scans *scanning.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		files, status, err := readUploads(w, r)
		if err != nil {
			apihttp.WriteErrorStatus(w, status, err)
			return
		}
		sc, derr := scans.Create(ctx, r.PathValue("examId"), files)
		if derr != nil {
			apihttp.WriteError(w, r, apihttp.ToConnect(ctx, derr))
			return
		}
		writeProtoJSON(w, r, scanToProto(sc))
	})
}

// writeProtoJSON answers a plain handler's request with m as the API's
// JSON, as the transcoder would.
func writeProtoJSON(w http.ResponseWriter, r *http.Request, m proto.Message) {
	body, err := marshalCompact(m)
	if err != nil {
		apihttp.WriteError(w, r, apihttp.ToConnect(r.Context(), err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body) //nolint:gosec // protojson of our own message, served as application/json
}

// readUploads reads the file parts of a multipart request, or says why
// not with an HTTP status.
func readUploads(w http.ResponseWriter, r *http.Request) ([]scanning.File, int, *connect.Error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxUploadRequest)
	invalid := func(field, format string, args ...any) (int, *connect.Error) {
		return http.StatusBadRequest, apihttp.ToConnect(r.Context(), errs.Invalid(field, format, args...))
	}
	tooLarge := func(message string) (int, *connect.Error) {
		return http.StatusRequestEntityTooLarge, apihttp.NewError(connect.CodeResourceExhausted, "FILE_TOO_LARGE", message, "file", nil)
	}
	mr, err := r.MultipartReader()
	if err != nil {
		status, ce := invalid("", "the multipart body cannot be read: %v", err)
		return nil, status, ce
	}
	var files []scanning.File
	for {
		part, err := mr.NextPart()
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(err, io.EOF):
			if len(files) == 0 {
				status, ce := invalid("file", "send at least one file in a part named file")
				return nil, status, ce
			}
			return files, 0, nil
		case errors.As(err, &tooBig):
			status, ce := tooLarge(fmt.Sprintf("the request exceeds %d MiB", maxUploadRequest>>20))
			return nil, status, ce
		case err != nil:
			status, ce := invalid("", "the multipart body cannot be read: %v", err)
			return nil, status, ce
		}
		if part.FormName() != "file" {
			status, ce := invalid(part.FormName(), "is not a field of this request: send files in parts named file")
			return nil, status, ce
		}
		if len(files) == scanning.MaxFiles {
			status, ce := invalid("file", "at most %d files may be sent at once", scanning.MaxFiles)
			return nil, status, ce
		}
		data, err := io.ReadAll(io.LimitReader(part, answersheet.MaxUploadBytes+1))
		switch {
		case errors.As(err, &tooBig):
			status, ce := tooLarge(fmt.Sprintf("the request exceeds %d MiB", maxUploadRequest>>20))
			return nil, status, ce
		case err != nil:
			status, ce := invalid("file", "cannot be read: %v", err)
			return nil, status, ce
		case len(data) > answersheet.MaxUploadBytes:
			status, ce := tooLarge(fmt.Sprintf("each file may be at most %d MiB", answersheet.MaxUploadBytes>>20))
			return nil, status, ce
		}
		files = append(files, scanning.File{Data: data})
	}
}
