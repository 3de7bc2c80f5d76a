package app_test

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// gzipped compresses data.
func gzipped(t *testing.T, data ...[]byte) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	for _, d := range data {
		if _, err := zw.Write(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// bomb is a gzip stream of under a megabyte that inflates to size bytes:
// prefix, then zeros, a whole number of MiB of them. Compressing 256 MiB
// takes seconds under the race detector, so only the first MiB is
// compressed. Once the window holds nothing but zeros, the deflate blocks
// that encode the next MiB of zeros decode the same whatever came before,
// so they are written once and repeated.
func bomb(t *testing.T, prefix []byte, size int) string {
	t.Helper()
	const mib = 1 << 20
	zeros := make([]byte, mib)
	var body bytes.Buffer
	zw, err := flate.NewWriter(&body, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	// Each Flush ends its blocks on a byte boundary.
	flush := func(data ...[]byte) []byte {
		start := body.Len()
		for _, d := range data {
			if _, err := zw.Write(d); err != nil {
				t.Fatal(err)
			}
		}
		if err := zw.Flush(); err != nil {
			t.Fatal(err)
		}
		return body.Bytes()[start:]
	}
	count := max(1, (size-len(prefix)+mib-1)/mib) // MiB of zeros
	flush(prefix, zeros)
	if count > 1 {
		chunk := bytes.Clone(flush(zeros))
		for range count - 2 {
			body.Write(chunk)
		}
	}
	crc := crc32.ChecksumIEEE(prefix)
	for range count {
		crc = crc32.Update(crc, crc32.IEEETable, zeros)
	}
	inflated := len(prefix) + count*mib
	out := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff} // gzip, deflate, no name or time
	out = append(out, body.Bytes()...)
	out = append(out, 0x03, 0x00) // the last block: fixed codes, only its end
	out = binary.LittleEndian.AppendUint32(out, crc)
	out = binary.LittleEndian.AppendUint32(out, uint32(inflated))
	return string(out)
}

// TestBombInflatesToItsSize: the hand-assembled stream is gzip that
// inflates to the prefix and the zeros, its checksum and length right.
func TestBombInflatesToItsSize(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1 << 20, 3 << 20, 5<<20 + 7} {
		zr, err := gzip.NewReader(strings.NewReader(bomb(t, []byte("head"), size)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		want := len("head") + (size-len("head")+(1<<20)-1)/(1<<20)*(1<<20)
		if len(got) != want || string(got[:4]) != "head" || bytes.ContainsFunc(got[4:], func(r rune) bool { return r != 0 }) {
			t.Fatalf("size %d: inflated to %d bytes starting %q, want %d: the prefix, then zeros", size, len(got), got[:4], want)
		}
	}
}

// TestCompressedAndBinaryBodies holds compressed and protobuf request
// bodies to the rules of plain JSON ones: bounded once inflated, and a
// client's mistake when they cannot be decoded, never a server error.
func TestCompressedAndBinaryBodies(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	key := tn.Keys[tenancy.RoleOwner]
	const inflated = 256 << 20 // what each bomb inflates to
	gz := http.Header{"Content-Encoding": {"gzip"}}

	t.Run("a gzipped JSON body is read", func(t *testing.T) {
		r := e.DoWith("POST", "/exams", key, gzipped(t, []byte(`{"name":"Gzipped","language":"en"}`)), gz).Must(t, http.StatusOK)
		if r.Body["name"] != "Gzipped" {
			t.Fatalf("created %s", r.Raw)
		}
	})
	for _, c := range []struct {
		name, path, body, contentType, encoding string
		status                                  int
		reason                                  string
	}{
		{"REST, inflating beyond the body limit", "/exams", bomb(t, []byte(`{"name":"`), inflated), "application/json", "gzip", 413, "BODY_TOO_LARGE"},
		{"REST, not gzip", "/exams", "not gzip at all", "application/json", "gzip", 400, "INVALID_BODY"},
		{"REST, an unsupported encoding", "/exams", "x", "application/json", "br", 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"Connect, inflating beyond the body limit", "/assessd.v1.ExamService/CreateExam", bomb(t, []byte{0x0a}, inflated), "application/proto", "gzip", 413, "BODY_TOO_LARGE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{"Content-Type": {c.contentType}, "Content-Encoding": {c.encoding}}
			if strings.HasPrefix(c.path, "/assessd.v1.") {
				h.Set("Connect-Protocol-Version", "1")
			}
			r := e.DoWith("POST", c.path, key, c.body, h).Must(t, c.status)
			if r.Reason() != c.reason {
				t.Fatalf("reason %q, want %q: %s", r.Reason(), c.reason, r.Raw)
			}
		})
	}

	t.Run("Connect, a malformed protobuf message", func(t *testing.T) {
		h := http.Header{"Content-Type": {"application/proto"}, "Connect-Protocol-Version": {"1"}}
		for _, msg := range []string{"\xff", "\x0a\x05ab", "\x0a\xff\xff\xff\xff\x0f"} {
			r := e.DoWith("POST", "/assessd.v1.ExamService/CreateExam", key, msg, h).Must(t, http.StatusBadRequest)
			if r.Body["code"] != "invalid_argument" {
				t.Fatalf("%q: %s", msg, r.Raw)
			}
		}
	})

	// gRPC-Web compresses each message of the stream, inside the body: the
	// transcoder inflates it, and stops at the body limit.
	t.Run("gRPC-Web, a message inflating beyond the body limit", func(t *testing.T) {
		// CreateExamRequest{name: 256 MiB}: tag 1, wire type 2, the length
		// as a varint, then the bytes.
		field := binary.AppendUvarint([]byte{0x0a}, inflated)
		msg := bomb(t, field, inflated)
		frame := append([]byte{1}, binary.BigEndian.AppendUint32(nil, uint32(len(msg)))...)
		h := http.Header{"Content-Type": {"application/grpc-web+proto"}, "Grpc-Encoding": {"gzip"}}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := e.DoWith("POST", "/assessd.v1.ExamService/CreateExam", key, string(frame)+msg, h)
		runtime.ReadMemStats(&after)
		if got := r.Header.Get("Grpc-Status"); got != "8" { // resource exhausted
			t.Fatalf("grpc-status %q (%s), want 8: %d %q", got, r.Header.Get("Grpc-Message"), r.Status, r.Raw)
		}
		// Inflating it all would allocate the 256 MiB at least once.
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 128<<20 {
			t.Fatalf("the request allocated %d MiB", grown>>20)
		}
	})
}
