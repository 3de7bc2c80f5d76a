package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/protobuf/proto"
)

// counts tallies the JSON work done on request bodies: decodes on either
// side of the transcoder, and the transcoder re-encoding a request message
// for the handler.
type counts struct{ restDecodes, restEncodes, connectDecodes atomic.Int64 }

type countingREST struct {
	vanguard.Codec
	n *counts
}

func (c countingREST) Unmarshal(data []byte, msg proto.Message) error {
	c.n.restDecodes.Add(1)
	return c.Codec.Unmarshal(data, msg)
}

func (c countingREST) MarshalAppend(base []byte, msg proto.Message) ([]byte, error) {
	if msg.ProtoReflect().Descriptor().FullName().Parent() != errorPackage {
		c.n.restEncodes.Add(1)
	}
	return c.Codec.MarshalAppend(base, msg)
}

type countingConnect struct {
	connect.Codec
	n *counts
}

func (c countingConnect) Unmarshal(data []byte, v any) error {
	c.n.connectDecodes.Add(1)
	return c.Codec.Unmarshal(data, v)
}

// TestEachBodyIsDecodedOnce counts, per kind of route, how often a request
// body is decoded before the handler runs (an interceptor stops each call
// there, so no service is needed): once wherever the transcoder can pass
// the body through; on routes whose message it must complete from the path
// or the query, it decodes, re-encodes for the handler, and the handler
// decodes again (decision 0081). An empty body arrives here as {} (the
// server's body limit makes it so).
func TestEachBodyIsDecodedOnce(t *testing.T) {
	n := &counts{}
	stop := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(connect.UnaryFunc) connect.UnaryFunc {
		return func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
			return nil, connect.NewError(connect.CodeUnavailable, nil)
		}
	}))
	h, err := newHandler(Services{}, codecs{
		rest:    func(r vanguard.TypeResolver) vanguard.Codec { return countingREST{newRESTJSON(r), n} },
		connect: countingConnect{connectJSON{}, n},
	}, stop)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, method, path, body, contentType string
		rest, reencode, connect               int64
	}{
		{"body * without path variables", "POST", "/folders", `{"name":"F"}`, "application/json", 0, 0, 1},
		{"body * with a query", "POST", "/folders?x=1", `{"name":"F"}`, "application/json", 1, 1, 1},
		{"body * with path variables", "PATCH", "/folders/fld_1", `{"name":"F"}`, "application/json", 1, 1, 1},
		{"no body", "GET", "/folders/fld_1", ``, "", 0, 1, 1},
		{"Connect", "POST", "/assessd.v1.FolderService/CreateFolder", `{"name":"F"}`, "application/json", 0, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			n.restDecodes.Store(0)
			n.restEncodes.Store(0)
			n.connectDecodes.Store(0)
			r := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
			if c.contentType != "" {
				r.Header.Set("Content-Type", c.contentType)
			}
			if strings.HasPrefix(c.path, "/assessd.v1.") {
				r.Header.Set("Connect-Protocol-Version", "1")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want the interceptor's 503: %s", w.Code, w.Body)
			}
			rest, reencode, conn := n.restDecodes.Load(), n.restEncodes.Load(), n.connectDecodes.Load()
			t.Logf("REST decodes %d, re-encodes %d, Connect decodes %d", rest, reencode, conn)
			if rest != c.rest || reencode != c.reencode || conn != c.connect {
				t.Errorf("REST decodes %d, re-encodes %d, Connect decodes %d; want %d, %d, %d",
					rest, reencode, conn, c.rest, c.reencode, c.connect)
			}
		})
	}
}
