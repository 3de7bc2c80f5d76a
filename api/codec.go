package api

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// strictJSON is the REST body codec: it rejects unknown fields (vanguard's
// default discards them) and turns every decoding failure into a 400 that
// names the field, instead of the transcoder's default 500.
type strictJSON struct {
	*vanguard.JSONCodec
}

func newStrictJSON(res vanguard.TypeResolver) vanguard.Codec {
	c := vanguard.NewJSONCodec(res)
	c.UnmarshalOptions.DiscardUnknown = false
	return strictJSON{c}
}

// MarshalAppend writes compact JSON: protojson varies its whitespace on
// purpose, and clients read nicer, smaller bodies without it.
func (c strictJSON) MarshalAppend(base []byte, msg proto.Message) ([]byte, error) {
	data, err := c.JSONCodec.MarshalAppend(nil, msg)
	return appendCompact(base, data, err)
}

func (c strictJSON) MarshalAppendField(base []byte, msg proto.Message, field protoreflect.FieldDescriptor) ([]byte, error) {
	data, err := c.JSONCodec.MarshalAppendField(nil, msg, field)
	return appendCompact(base, data, err)
}

func appendCompact(base, data []byte, err error) ([]byte, error) {
	if err != nil {
		return base, err
	}
	buf := bytes.NewBuffer(base)
	if err := json.Compact(buf, data); err != nil {
		return base, err
	}
	return buf.Bytes(), nil
}

func (c strictJSON) Unmarshal(data []byte, msg proto.Message) error {
	return bodyError(c.JSONCodec.Unmarshal(data, msg))
}

func (c strictJSON) UnmarshalField(data []byte, msg proto.Message, field protoreflect.FieldDescriptor) error {
	return bodyError(c.JSONCodec.UnmarshalField(data, msg, field))
}

var (
	protojsonPosition = regexp.MustCompile(`^proto:\s*(\(line \d+:\d+\):\s*)?`)
	protojsonField    = regexp.MustCompile(`field "?([A-Za-z_][A-Za-z0-9_.]*)"?`)
)

// bodyError rewrites a protojson error ("proto: (line 1:2): unknown field
// "x"") into a client-facing InvalidArgument naming the field.
func bodyError(err error) error {
	if err == nil {
		return nil
	}
	msg := protojsonPosition.ReplaceAllString(strings.ReplaceAll(err.Error(), "\u00a0", " "), "")
	field := ""
	if m := protojsonField.FindStringSubmatch(msg); m != nil {
		field = m[1]
	}
	return NewError(connect.CodeInvalidArgument, "INVALID_BODY", "invalid request body: "+msg, field, nil)
}
