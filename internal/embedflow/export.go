package embedflow

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"

	"github.com/assessd/assessd/internal/exchange"
	"github.com/assessd/assessd/internal/transfer"
)

// Exporter loads an exam for export, as the session's actor (the
// authoring flow's Export links, issue 13).
type Exporter interface {
	Export(ctx context.Context, examID, format string) (exchange.Document, error)
}

var _ Exporter = (*transfer.Service)(nil)

// ExportRoutes adds GET /embed/{id}/export?format=qti3|json to the
// authoring flow: the session's exam as a download.
func (s *Service) ExportRoutes(mux *http.ServeMux, ex Exporter) {
	mux.HandleFunc("GET /embed/{id}/export", func(w http.ResponseWriter, r *http.Request) {
		sess, ctx, ok := s.asActor(w, r, FlowAuthoring)
		if !ok {
			return
		}
		format := cmp.Or(r.URL.Query().Get("format"), transfer.FormatQTI3)
		doc, err := ex.Export(ctx, sess.ExamID, format)
		if err != nil {
			s.authoringPage(w, r, sess, ctx, pageError(r.Context(), err), nil)
			return
		}
		if err := transfer.ServeExport(w, sess.ExamID, format, doc); err != nil {
			slog.WarnContext(ctx, "embed export interrupted", "err", err)
		}
	})
}
