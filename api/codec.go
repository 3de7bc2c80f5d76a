package api

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/assessd/assessd/internal/pbjson"
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
		return appendCompact(base, data, err)
	}
	if out, ok := pbjson.Append(base, msg); ok {
		return out, nil
	}
	data, err := c.JSONCodec.MarshalAppend(nil, msg)
	return appendCompact(base, data, err)
}

// errorPackage holds google.rpc.Status and the error details.
const errorPackage protoreflect.FullName = "google.rpc"

func (c restJSON) MarshalAppendField(base []byte, msg proto.Message, field protoreflect.FieldDescriptor) ([]byte, error) {
	data, err := c.JSONCodec.MarshalAppendField(nil, msg, field)
	return appendCompact(base, data, err)
}

func (c restJSON) Unmarshal(data []byte, msg proto.Message) error {
	return bodyError(c.JSONCodec.Unmarshal(data, msg))
}

func (c restJSON) UnmarshalField(data []byte, msg proto.Message, field protoreflect.FieldDescriptor) error {
	return bodyError(c.JSONCodec.UnmarshalField(data, msg, field))
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
	return appendCompact(nil, data, err)
}

// Unmarshal is the one decode of a body the transcoder passes through
// (body "*" on a path without variables, no query), and of Connect calls.
// Connect wraps a
// decoding error without its details ("unmarshal message: ..."), so the
// error carries only the client-facing message; ShapeError restores the
// API's shape from it on the REST surface.
func (connectJSON) Unmarshal(data []byte, v any) error {
	msg, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("unmarshal into %T: not a protobuf message", v)
	}
	if err := unmarshalJSON.Unmarshal(data, msg); err != nil {
		text, _ := bodyProblem(err)
		return errors.New(text)
	}
	return nil
}

// appendCompact appends protojson's data to base without the space that
// protojson writes after each comma in some builds (chosen by a hash of the
// executable, so that nobody relies on its bytes). On a single line that
// space is the only whitespace outside strings, so one pass that skips it
// does what json.Compact does, at a fraction of its cost: compacting every
// body with json.Compact took 2-4% of a request's CPU.
func appendCompact(base, data []byte, err error) ([]byte, error) {
	if err != nil {
		return base, err
	}
	from := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case ' ':
			base = append(base, data[from:i]...)
			from = i + 1
		case '"':
			i = closingQuote(data, i)
		}
	}
	return append(base, data[from:]...), nil
}

// closingQuote is the index of the quote that ends the string opening at
// data[open]: the next quote after an even number of backslashes.
func closingQuote(data []byte, open int) int {
	for i := open + 1; i < len(data); i++ {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			break
		}
		i += j
		backslashes := 0
		for data[i-1-backslashes] == '\\' {
			backslashes++
		}
		if backslashes%2 == 0 {
			return i
		}
	}
	return len(data)
}

var (
	protojsonPosition = regexp.MustCompile(`^proto:\s*(syntax error\s*)?(\(line \d+:\d+\):\s*)?`)
	protojsonField    = regexp.MustCompile(`field "?([A-Za-z_][A-Za-z0-9_.]*)"?`)
	// protojsonTypes names the protobuf types protojson mentions, with the
	// words a client understands.
	protojsonTypes = strings.NewReplacer(
		"google.protobuf.Value", "JSON value",
		"google.protobuf.Struct", "JSON object",
		"google.protobuf.ListValue", "JSON array",
		"google.protobuf.Timestamp", "RFC 3339 time",
		"google.protobuf.Duration", "duration",
	)
	internalName = regexp.MustCompile(`(assessd\.v1|google\.protobuf)\.[A-Za-z0-9_.]+`)
)

// bodyError rewrites a protojson error ("proto: (line 1:2): unknown field
// "x"") into a client-facing InvalidArgument naming the field.
func bodyError(err error) error {
	if err == nil {
		return nil
	}
	msg, field := bodyProblem(err)
	return NewError(connect.CodeInvalidArgument, "INVALID_BODY", msg, field, nil)
}

// invalidBody starts the message of every body decoding error.
const invalidBody = "invalid request body: "

// bodyProblem says what is wrong with a body protojson could not decode,
// in a client's words, and names the field when there is one.
func bodyProblem(err error) (msg, field string) {
	msg = protojsonPosition.ReplaceAllString(strings.ReplaceAll(err.Error(), "\u00a0", " "), "")
	msg = internalName.ReplaceAllString(protojsonTypes.Replace(msg), "value")
	return invalidBody + msg, problemField(msg)
}

// problemField returns the field a decoding error message names, or "".
func problemField(msg string) string {
	if m := protojsonField.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}
