package api

import (
	"net/http"
	"strconv"

	"github.com/assessd/assessd/internal/media"
)

// MediaFiles serves GET /media/{id}/{name}: an uploaded answer file, to
// anyone holding its URL (decision 0121: the URL is the capability, as on a
// CDN, so grading workers fetch it without credentials). The type is the
// one sniffed at upload; only images are shown inline, everything else is
// a download, and the sandbox keeps any content from running as a page.
func MediaFiles(files *media.Files) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := files.Get(r.Context(), r.PathValue("id"), r.PathValue("name"))
		if err != nil {
			WriteError(w, r, ToConnect(r.Context(), err))
			return
		}
		disposition := "attachment"
		if f.Image() {
			disposition = "inline"
		}
		h := w.Header()
		h.Set("Content-Type", f.ContentType)
		h.Set("Content-Length", strconv.Itoa(len(f.Data)))
		h.Set("Content-Disposition", disposition+`; filename="`+f.Name+`"`)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
		h.Set("Cache-Control", "private, max-age=86400, immutable")
		if r.Method != http.MethodHead {
			_, _ = w.Write(f.Data) //nolint:gosec // sniffed allow-listed type, nosniff, sandboxed
		}
	})
}
