package api

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/api/httpbody"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/exchange"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/transfer"
)

// ExamExport serves GET /exams/{examId}/export: the exam as a QTI 3.0
// package (format=qti3, the default) or the native document
// (format=json), written straight to the response as it is produced.
func ExamExport(svc *transfer.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		format := cmp.Or(r.URL.Query().Get("format"), transfer.FormatQTI3)
		examID := r.PathValue("examId")
		doc, err := svc.Export(ctx, examID, format)
		if err != nil {
			apihttp.WriteError(w, r, apihttp.ToConnect(ctx, err))
			return
		}
		if err := transfer.ServeExport(w, examID, format, doc); err != nil {
			// The status is sent: a broken body is all the client sees.
			slog.WarnContext(ctx, "export interrupted", "exam", examID, "err", err)
		}
	})
}

// ExamImports serves POST /exam-imports: a QTI package (application/zip),
// a native document (application/json) or either in the multipart field
// file, read within the import limits rather than the API's 1 MiB.
func ExamImports(svc *transfer.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		body, err := importBody(w, r, svc.Limits().MaxBody)
		if err == nil {
			var imp transfer.Imported
			if imp, err = svc.Import(ctx, body); err == nil {
				writeProtoJSON(w, r, importToProto(imp))
				return
			}
		}
		ce := apihttp.ToConnect(ctx, err)
		status := apihttp.HTTPStatus(ce.Code())
		if e, ok := errs.As(err); ok && e.Reason == exchange.ReasonTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		apihttp.WriteErrorStatus(w, status, ce)
	})
}

// importBody returns the request's package: the body itself, or the part
// named file of a multipart body. The whole request is bounded a little
// above maxBody so multipart framing fits.
func importBody(w http.ResponseWriter, r *http.Request, maxBody int64) (io.Reader, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return r.Body, nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, errs.Invalid("file", "the multipart body cannot be read: %v", err)
	}
	for {
		part, err := mr.NextPart()
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(err, io.EOF):
			return nil, errs.Invalid("file", "send the package in a part named file")
		case errors.As(err, &tooBig):
			return nil, &errs.Error{Kind: errs.KindInvalid, Reason: exchange.ReasonTooLarge, Field: "file",
				Message: fmt.Sprintf("file: must be at most %d bytes", maxBody)}
		case err != nil:
			return nil, errs.Invalid("file", "the multipart body cannot be read: %v", err)
		}
		if part.FormName() == "file" {
			return part, nil
		}
	}
}

type exchangeServer struct{ transfers *transfer.Service }

var _ assessdv1connect.ExamExchangeServiceHandler = exchangeServer{}

// ExportExam answers Connect and gRPC clients, whose protocols carry the
// body in one message; REST clients are served by ExamExport, streaming.
func (s exchangeServer) ExportExam(ctx context.Context, req *connect.Request[v1.ExportExamRequest]) (*connect.Response[httpbody.HttpBody], error) {
	format := cmp.Or(req.Msg.Format, transfer.FormatQTI3)
	doc, err := s.transfers.Export(ctx, req.Msg.ExamId, format)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	var buf bytes.Buffer
	write, ctype, _ := transfer.Writer(format)
	if err := write(&buf, doc); err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(&httpbody.HttpBody{ContentType: ctype, Data: buf.Bytes()}), nil
}

// CreateExamImport answers Connect and gRPC clients, within the API's body
// limit; REST clients are served by ExamImports.
func (s exchangeServer) CreateExamImport(ctx context.Context, req *connect.Request[httpbody.HttpBody]) (*connect.Response[v1.ExamImport], error) {
	imp, err := s.transfers.Import(ctx, bytes.NewReader(req.Msg.Data))
	return reply(ctx, imp, err, importToProto)
}

func importToProto(imp transfer.Imported) *v1.ExamImport {
	out := &v1.ExamImport{Id: imp.ID, ExamId: imp.ExamID, Warnings: make([]*v1.ImportWarning, len(imp.Warnings))}
	for i, w := range imp.Warnings {
		out.Warnings[i] = &v1.ImportWarning{Item: w.Item, Message: w.Message}
	}
	return out
}
