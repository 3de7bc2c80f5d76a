package api

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/protobuf/proto"

	"github.com/assessd/assessd/internal/platform/apihttp"
)

// The transcoder decodes what RPC clients send in protobuf and inflates
// what they compress. Its own codec and decompressor answer a malformed
// message as a server fault (500) and inflate without a bound, so a
// megabyte of gzip could make it buffer a gigabyte. These replace them.

// protoCodec is the transcoder's protobuf codec, with malformed messages
// reported as the client's mistake.
type protoCodec struct{ *vanguard.ProtoCodec }

func newProtoCodec(res vanguard.TypeResolver) vanguard.Codec {
	return protoCodec{vanguard.NewProtoCodec(res)}
}

func (c protoCodec) Unmarshal(data []byte, msg proto.Message) error {
	if err := c.ProtoCodec.Unmarshal(data, msg); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("invalid request message: %w", err))
	}
	return nil
}

// inflatedTooLarge refuses a message that inflates beyond
// apihttp.MaxBodyBytes, the bound of an uncompressed body.
func inflatedTooLarge() error {
	return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("request message exceeds %d bytes once decompressed", apihttp.MaxBodyBytes))
}

// boundedGunzip is the transcoder's gzip decompressor: it reads at most
// apihttp.MaxBodyBytes of inflated data per message.
type boundedGunzip struct {
	gz   gzip.Reader
	left int64
}

func newBoundedGunzip() connect.Decompressor { return &boundedGunzip{} }

func (d *boundedGunzip) Reset(r io.Reader) error {
	d.left = apihttp.MaxBodyBytes
	if err := d.gz.Reset(r); err != nil {
		return invalidGzip(err)
	}
	return nil
}

func (d *boundedGunzip) Read(p []byte) (int, error) {
	if d.left <= 0 {
		// At the bound: one more byte means the message is too large.
		var probe [1]byte
		for {
			n, err := d.gz.Read(probe[:])
			if n > 0 {
				return 0, inflatedTooLarge()
			}
			if err != nil {
				return 0, invalidGzip(err)
			}
		}
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.gz.Read(p)
	d.left -= int64(n)
	return n, invalidGzip(err)
}

func (d *boundedGunzip) Close() error { return invalidGzip(d.gz.Close()) }

// invalidGzip reports a corrupt stream as invalid input; nil and io.EOF
// pass unchanged.
func invalidGzip(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("the message is not valid gzip: %w", err))
}

func newGzip() connect.Compressor { return gzip.NewWriter(io.Discard) }
