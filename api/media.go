package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/errs"
)

// MediaUploads serves POST /media: one multipart part named file, stored
// for the caller's organization (results:write, any role) and answered
// with its URL under /media/, to name in an answer's files (decision 0121).
// The route has no JSON form, so any other body is a 415.
func MediaUploads(files *media.Files) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
			apihttp.WriteErrorStatus(w, http.StatusUnsupportedMediaType, apihttp.NewError(connect.CodeInvalidArgument, "UNSUPPORTED_MEDIA_TYPE",
				"send the file as multipart/form-data, in one part named file", "", nil))
			return
		}
		// The file at its limit, with room for the part's headers.
		r.Body = http.MaxBytesReader(w, r.Body, files.MaxBytes()+64<<10)
		part, header, err := r.FormFile("file")
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			apihttp.WriteErrorStatus(w, http.StatusRequestEntityTooLarge, apihttp.NewError(connect.CodeResourceExhausted, "FILE_TOO_LARGE",
				fmt.Sprintf("the file may be at most %s", media.Size(files.MaxBytes())), "file", nil))
			return
		}
		if err != nil {
			apihttp.WriteError(w, r, apihttp.ToConnect(ctx, errs.Invalid("file", "send one file in a multipart part named file")))
			return
		}
		defer func() { _ = part.Close() }()
		data, err := io.ReadAll(part)
		if err != nil {
			apihttp.WriteError(w, r, apihttp.ToConnect(ctx, errs.Invalid("file", "cannot be read: %v", err)))
			return
		}
		url, err := files.Put(ctx, "file", header.Filename, data)
		if err != nil {
			apihttp.WriteError(w, r, apihttp.ToConnect(ctx, err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"url": url, "size": len(data)})
	})
}

// MediaFiles serves GET /media/{id}/{name}: an uploaded answer file, to
// anyone holding its URL (decision 0121: the URL is the capability, as on a
// CDN, so grading workers fetch it without credentials). The type is the
// one sniffed at upload; only images are shown inline, everything else is
// a download, and the sandbox keeps any content from running as a page.
func MediaFiles(files *media.Files) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := files.Open(r.Context(), r.PathValue("id"), r.PathValue("name"))
		if err != nil {
			apihttp.WriteError(w, r, apihttp.ToConnect(r.Context(), err))
			return
		}
		disposition := "attachment"
		if f.Image() {
			disposition = "inline"
		}
		h := w.Header()
		h.Set("Content-Type", f.ContentType)
		h.Set("Content-Disposition", disposition+`; filename="`+f.Name+`"`)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
		h.Set("Cache-Control", "private, max-age=86400, immutable")
		h.Set("ETag", `"`+f.ID+`"`) // a file never changes under its id
		// ServeContent reads the file a chunk at a time and answers ranges,
		// HEAD and If-None-Match; the type above is never sniffed again.
		http.ServeContent(w, r, "", time.Time{}, f.Content)
	})
}
