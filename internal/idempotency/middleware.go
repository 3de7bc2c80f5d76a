package idempotency

import (
	"bytes"
	"context"
	"crypto/subtle"
	"io"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"

	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/tenancy"
)

// Header is the request header that names a key.
const Header = "Idempotency-Key"

// ReplayedHeader marks a response answered from a key, not run again.
const ReplayedHeader = "Idempotent-Replayed"

// maxKeyLength bounds a key, as Stripe's 255 characters.
const maxKeyLength = 255

// maxComparedBody bounds the body a retry is read for, to compare it with
// the first one's: past the largest upload the API takes (ten scans of 20
// MiB), it cannot be that body.
const maxComparedBody = 256 << 20

// maxTrailingBody bounds what is read after a handler that answered 2xx
// stopped reading its body: its hash covers the whole body, and a body the
// handler left longer than this is not worth reading.
const maxTrailingBody = 64 << 10

// Middleware runs an authenticated POST, PUT or PATCH that carries the header
// once per key, caller and request, and answers its retries the first
// response: status, Content-Type and body, with Idempotent-Replayed: true.
// A 2xx is kept, and so is any answer of a request that changed data;
// another answer wrote nothing, so a retry runs again. A key in use by a
// request still running answers 409 IDEMPOTENCY_KEY_IN_USE; a key whose
// request changed data and died before it answered, 409
// IDEMPOTENCY_KEY_UNANSWERED; a key used for another request or body, 422
// IDEMPOTENCY_KEY_REUSED. Requests without the header pass untouched.
func (k *Keys) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(Header)
		caller, ok := tenancy.CallerFrom(r.Context())
		if key == "" || !ok || (r.Method != http.MethodPost && r.Method != http.MethodPatch && r.Method != http.MethodPut) {
			next.ServeHTTP(w, r)
			return
		}
		if !validKey(key) {
			k.count(caller.OrgID, outcomeInvalid)
			refuse(w, http.StatusBadRequest, connect.CodeInvalidArgument, "INVALID_ARGUMENT", Header, "must be 1 to 255 printable ASCII characters")
			return
		}
		u := use{principal: principal(caller), key: key, request: r.Method + " " + r.URL.RequestURI()}
		fresh, s, err := k.reserve(r.Context(), u)
		switch {
		case err != nil:
			apihttp.WriteError(w, r, apihttp.ToConnect(r.Context(), err))
		case fresh:
			k.count(caller.OrgID, outcomeRun)
			k.run(w, r, u, next)
		case s.status == 0 && !s.unanswered:
			k.count(caller.OrgID, outcomeInUse)
			w.Header().Set("Retry-After", "1")
			refuse(w, http.StatusConflict, connect.CodeAborted, "IDEMPOTENCY_KEY_IN_USE", "", "a request with this key is still running; retry when it has answered")
		case s.request != u.request || (!s.unanswered && !sameBody(r, s.bodyHash)):
			k.count(caller.OrgID, outcomeReused)
			refuse(w, http.StatusUnprocessableEntity, connect.CodeFailedPrecondition, "IDEMPOTENCY_KEY_REUSED", Header, "was used for a different request; use a new key for each request")
		case s.unanswered:
			// Its body was never hashed: the request line is all there is
			// to compare.
			k.count(caller.OrgID, outcomeUnanswered)
			refuse(w, http.StatusConflict, connect.CodeFailedPrecondition, "IDEMPOTENCY_KEY_UNANSWERED", "",
				"the request first sent with this key changed data, and the server stopped before it answered; look up what it did before you send it again with a new key")
		default:
			k.count(caller.OrgID, outcomeReplayed)
			if s.contentType != "" {
				w.Header().Set("Content-Type", s.contentType)
			}
			w.Header().Set(ReplayedHeader, "true")
			w.WriteHeader(s.status)
			_, _ = w.Write(s.response) //nolint:gosec // the stored response of this caller's own request, as first served
		}
	})
}

// run serves the request that took the key, renewing its reservation
// while it runs and noting on the key, with each transaction that writes,
// that it changed data. It keeps the response when it is a 2xx or the
// request wrote, and frees the key otherwise. A panic after a write leaves
// no answer to keep: the key is marked unanswered at once. The key's row
// is written before the response is finished, so a retry sent after the
// answer arrived finds it; and whatever the client does meanwhile.
func (k *Keys) run(w http.ResponseWriter, r *http.Request, u use, next http.Handler) {
	body := &hashingBody{ReadCloser: r.Body, sum: newBodyHash(r.Header.Get("Content-Type"))}
	r.Body = body
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	returned := false
	stopRenewing := k.keepReserved(r.Context(), u)
	defer func() {
		stopRenewing()
		ctx := context.WithoutCancel(r.Context())
		if err := k.finish(ctx, u, returned, rec, body); err != nil {
			// The key stays reserved until its lease ends: a retry
			// meanwhile is told to wait, then runs again if the request
			// wrote nothing.
			slog.ErrorContext(ctx, "idempotency key not recorded", "err", err)
		}
	}()
	next.ServeHTTP(rec, r.WithContext(noteWrites(r.Context(), u)))
	returned = true
}

// finish records how u's request ended: its response when it returned a
// 2xx, else the key freed if it wrote nothing, else its response kept
// when it returned, else (it panicked) the key left unanswered.
func (k *Keys) finish(ctx context.Context, u use, returned bool, rec *recorder, body *hashingBody) error {
	if !returned || rec.status < 200 || rec.status >= 300 {
		freed, err := k.release(ctx, u)
		if err != nil || freed {
			return err
		}
		if !returned {
			return k.abandon(ctx, u)
		}
	}
	_, _ = io.CopyN(body.sum, body.ReadCloser, maxTrailingBody)
	return k.complete(ctx, u, body.sum.Sum(), rec.status, rec.Header().Get("Content-Type"), &rec.body)
}

// sameBody reports whether r's body has the fingerprint want, reading all
// of it.
func sameBody(r *http.Request, want []byte) bool {
	sum := newBodyHash(r.Header.Get("Content-Type"))
	if n, err := io.Copy(sum, io.LimitReader(r.Body, maxComparedBody+1)); err != nil || n > maxComparedBody {
		return false
	}
	return subtle.ConstantTimeCompare(sum.Sum(), want) == 1
}

// principal names the caller a key belongs to: the user, the app acting
// for a user, or the service account, whichever credential they use.
func principal(c *tenancy.Caller) string {
	return string(c.Kind) + ":" + c.ClientID + ":" + c.UserID
}

func validKey(key string) bool {
	if len(key) > maxKeyLength {
		return false
	}
	for i := range len(key) {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// refuse answers the key's refusal; field names the header when the key
// itself is at fault.
func refuse(w http.ResponseWriter, status int, code connect.Code, reason, field, message string) {
	apihttp.WriteErrorStatus(w, status, apihttp.NewError(code, reason, Header+": "+message, field, nil))
}

// hashingBody hashes a request body as the handler reads it.
type hashingBody struct {
	io.ReadCloser
	sum *bodyHash
}

func (b *hashingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	_, _ = b.sum.Write(p[:n]) // a hash never fails
	return n, err
}

// recorder passes a response through and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (rec *recorder) WriteHeader(status int) {
	if !rec.wroteHeader {
		rec.status, rec.wroteHeader = status, true
	}
	rec.ResponseWriter.WriteHeader(status)
}

func (rec *recorder) Write(p []byte) (int, error) {
	rec.wroteHeader = true
	rec.body.Write(p)
	return rec.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }
