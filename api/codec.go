package api

import (
	"errors"
	"fmt"
	"sync"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/assessd/assessd/internal/pbjson"
	"github.com/assessd/assessd/internal/platform/apihttp"
)

// The API's JSON: every field emitted (clients see a stable shape, empty
// lists as []), compact output, and unknown or mistyped input fields
// rejected as 400s naming the field. Vanguard's REST codec and the Connect
// handlers' JSON codec share these options, so a body is held to the same
// rules whichever side decodes it.
var (
	marshalJSON   = protojson.MarshalOptions{EmitUnpopulated: true}
	unmarshalJSON = protojson.UnmarshalOptions{DiscardUnknown: false}
)

// restJSON is the codec Vanguard uses for REST bodies.
type restJSON struct {
	*vanguard.JSONCodec
}

// restCodecs holds the REST codec of each type resolver: Vanguard asks for
// a codec on every request, and the codec holds nothing but its options.
var restCodecs sync.Map // vanguard.TypeResolver → vanguard.Codec

func newRESTJSON(res vanguard.TypeResolver) vanguard.Codec {
	if c, ok := restCodecs.Load(res); ok {
		return c.(vanguard.Codec)
	}
	c := vanguard.NewJSONCodec(res)
	c.MarshalOptions.EmitUnpopulated = marshalJSON.EmitUnpopulated
	c.UnmarshalOptions.DiscardUnknown = unmarshalJSON.DiscardUnknown
	codec, _ := restCodecs.LoadOrStore(res, restJSON{c})
	return codec.(vanguard.Codec)
}

func (c restJSON) MarshalAppend(base []byte, msg proto.Message) ([]byte, error) {
	if msg.ProtoReflect().Descriptor().FullName().Parent() == errorPackage {
		// Error bodies carry only what is set: an ErrorInfo without
		// metadata or a violation without a reason is not a list of empty
		// fields.
		opts := c.JSONCodec.MarshalOptions
		opts.EmitUnpopulated = false
		data, err := opts.Marshal(msg)
		return apihttp.AppendCompact(base, data, err)
	}
	if out, ok := pbjson.Append(base, msg); ok {
		return out, nil
	}
	data, err := c.JSONCodec.MarshalAppend(nil, msg)
	return apihttp.AppendCompact(base, data, err)
}

// errorPackage holds google.rpc.Status and the error details.
const errorPackage protoreflect.FullName = "google.rpc"

func (c restJSON) MarshalAppendField(base []byte, msg proto.Message, field protoreflect.FieldDescriptor) ([]byte, error) {
	data, err := c.JSONCodec.MarshalAppendField(nil, msg, field)
	return apihttp.AppendCompact(base, data, err)
}

func (c restJSON) Unmarshal(data []byte, msg proto.Message) error {
	return apihttp.BodyError(c.JSONCodec.Unmarshal(data, msg))
}

func (c restJSON) UnmarshalField(data []byte, msg proto.Message, field protoreflect.FieldDescriptor) error {
	return apihttp.BodyError(c.JSONCodec.UnmarshalField(data, msg, field))
}

// connectJSON is the JSON codec of the Connect handlers. The transcoder
// hands JSON bodies to them as they are when it needs no transformation,
// and passes their JSON responses through, which saves a protobuf round
// trip per request.
type connectJSON struct{}

var _ connect.Codec = connectJSON{}

func (connectJSON) Name() string { return "json" }

func (connectJSON) Marshal(v any) ([]byte, error) {
	msg, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("marshal %T: not a protobuf message", v)
	}
	return marshalCompact(msg)
}

// marshalCompact is msg as the API's JSON, byte for byte what the
// transcoder writes (protojson varies its spacing on purpose): pbjson's
// output, or protojson's for what pbjson leaves to it.
func marshalCompact(msg proto.Message) ([]byte, error) {
	if out, ok := pbjson.Append(nil, msg); ok {
		return out, nil
	}
	data, err := marshalJSON.Marshal(msg)
	return apihttp.AppendCompact(nil, data, err)
}

// Unmarshal is the one decode of a body the transcoder passes through
// (body "*" on a path without variables, no query), and of Connect calls.
// Connect wraps a decoding error without its details ("unmarshal message:
// ..."), so the error carries only the client-facing message;
// apihttp.ShapeError restores the API's shape from it on the REST surface.
func (connectJSON) Unmarshal(data []byte, v any) error {
	msg, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("unmarshal into %T: not a protobuf message", v)
	}
	if err := unmarshalJSON.Unmarshal(data, msg); err != nil {
		text, _ := apihttp.BodyProblem(err)
		return errors.New(text)
	}
	return nil
}
