package grading

import (
	"context"
	"errors"
	"fmt"

	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/membudget"
)

// AnswerFileBytes bounds one answer's files together (decision 0167):
// OpenAI takes 50 MB a request, and base64 makes 32 MiB about 43 MB. An
// answer's files go to the provider in one request, and first grading
// attempts run as local activities outside the worker's activity slots
// (decision 0123), so the files are held within the worker's memory budget.
const AnswerFileBytes = 32 << 20

// answerFiles are an answer's files as graded, with the grading details'
// lists of what was attached and what was skipped.
type answerFiles struct {
	files             []ai.File
	attached, skipped []any
	release           func() // gives the files' bytes back to the budget
}

// fetchFiles fetches an answer's files from the media CDN (others are
// skipped, the skip recorded) within one reservation taken before the
// first fetch: two answers never wait on each other's bytes, and a file
// past the answer's share is skipped as too large.
func (a *Activities) fetchFiles(ctx context.Context, orgID string, urls []string) (answerFiles, error) {
	budget := a.Memory
	if budget == nil {
		budget = membudget.Worker
	}
	out := answerFiles{attached: []any{}, skipped: []any{}, release: func() {}}
	var onCDN []string
	for _, u := range urls {
		if a.Fetcher.OnCDN(u) {
			onCDN = append(onCDN, u)
			continue
		}
		out.skipped = append(out.skipped, skippedFile(u, "not on the media CDN"))
		a.Metrics.fileSkipped(orgID, a.Region, "not_on_cdn")
	}
	if len(onCDN) == 0 {
		return out, nil
	}
	reserved, err := budget.Acquire(ctx, min(int64(len(onCDN))*a.Fetcher.MaxBytes(), AnswerFileBytes))
	if err != nil {
		return answerFiles{}, err
	}
	left := reserved
	for _, u := range onCDN {
		f, err := a.Fetcher.FetchUpTo(ctx, u, left)
		if reason := skipReason(err, left < a.Fetcher.MaxBytes()); reason != "" {
			out.skipped = append(out.skipped, skippedFile(u, reason))
			a.Metrics.fileSkipped(orgID, a.Region, reason)
			continue
		}
		if err != nil {
			budget.Release(reserved)
			return answerFiles{}, fmt.Errorf("fetch %s: %w", u, err) // transient: retry
		}
		a.Metrics.fileFetched(orgID, a.Region)
		out.files = append(out.files, f)
		out.attached = append(out.attached, u)
		left -= int64(len(f.Data))
	}
	budget.Release(left)
	out.release = func() { budget.Release(reserved - left) }
	return out, nil
}

// skippedFile is the grading details' entry of a file left out.
func skippedFile(url, reason string) map[string]any {
	return map[string]any{"url": url, "reason": reason}
}

// skipReason names a fetch failure that retrying cannot fix, or "";
// shared tells a file too large for what the answer's other files left.
func skipReason(err error, shared bool) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, media.ErrNotOnCDN), errors.Is(err, media.ErrRedirectOffCDN):
		return "not on the media CDN"
	case errors.Is(err, media.ErrTooLarge) && shared:
		return "files too large together"
	case errors.Is(err, media.ErrTooLarge):
		return "file too large"
	case errors.Is(err, media.ErrUnsupportedType):
		return "unsupported file type"
	case errors.Is(err, media.ErrNotFound):
		return "file not found"
	}
	return ""
}
