package transfer

import (
	"io"
	"mime"
	"net/http"

	"github.com/assessd/assessd/internal/exchange"
)

// Writer returns how an export format is written: the writer, its media
// type and the file name extension of the download.
func Writer(format string) (write func(io.Writer, exchange.Document) error, mediaType, ext string) {
	if format == FormatJSON {
		return exchange.WriteNative, "application/json", "json"
	}
	return exchange.WriteQTI, "application/zip", "zip"
}

// ServeExport sends doc as a download named after the exam, writing it to
// the response as it is produced. Once the status is sent an error can
// only break the body; the caller logs it.
func ServeExport(w http.ResponseWriter, examID, format string, doc exchange.Document) error {
	write, mediaType, ext := Writer(format)
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": examID + "." + ext}))
	return write(w, doc)
}
