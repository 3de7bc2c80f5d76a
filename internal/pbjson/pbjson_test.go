package pbjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	_ "github.com/assessd/assessd/api/gen/assessd/v1" // the API's messages, registered
)

var reference = protojson.MarshalOptions{EmitUnpopulated: true}

// want is protojson's JSON for m without whitespace, or its error.
func want(m proto.Message) ([]byte, error) {
	data, err := reference.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, data); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// check holds Append to protojson for m: the same bytes, or a refusal
// where protojson fails.
func check(t *testing.T, m proto.Message) {
	t.Helper()
	ref, err := want(m)
	got, ok := Append([]byte("prefix"), m)
	switch {
	case err != nil && ok:
		t.Fatalf("%s: protojson refuses (%v), Append wrote %s", m.ProtoReflect().Descriptor().FullName(), err, got)
	case err == nil && !ok:
		t.Fatalf("%s: Append declined a message protojson writes: %s", m.ProtoReflect().Descriptor().FullName(), ref)
	case err == nil && !bytes.Equal(got, append([]byte("prefix"), ref...)):
		t.Fatalf("%s:\n got %s\nwant prefix%s", m.ProtoReflect().Descriptor().FullName(), got, ref)
	}
}

// TestAPIMessagesMatchProtojson fills every message of the API with random
// values, strings with everything JSON must escape and floats at the
// format's edges among them, and compares.
func TestAPIMessagesMatchProtojson(t *testing.T) {
	var types []protoreflect.MessageType
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if strings.HasPrefix(string(mt.Descriptor().FullName()), "assessd.v1.") {
			types = append(types, mt)
		}
		return true
	})
	if len(types) < 50 {
		t.Fatalf("found %d API message types; the registration import is missing", len(types))
	}
	g := generator{rnd: rand.New(rand.NewPCG(20261126, 1))}
	for _, mt := range types {
		for range 20 {
			m := mt.New()
			g.fill(m, 0)
			check(t, m.Interface())
		}
	}
}

// allKinds is a message type with a field of every kind and shape, built
// from a descriptor because the API has no float, 64-bit or bytes field.
func allKinds(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	field := func(name string, n int32, typ descriptorpb.FieldDescriptorProto_Type, label descriptorpb.FieldDescriptorProto_Label) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: typ.Enum(), Label: label.Enum()}
	}
	const opt, rep = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	var fields []*descriptorpb.FieldDescriptorProto
	n := int32(1)
	for v := range descriptorpb.FieldDescriptorProto_Type_value {
		typ := descriptorpb.FieldDescriptorProto_Type(descriptorpb.FieldDescriptorProto_Type_value[v])
		if typ == descriptorpb.FieldDescriptorProto_TYPE_GROUP {
			continue
		}
		name := strings.ToLower(strings.TrimPrefix(v, "TYPE_"))
		for _, f := range []*descriptorpb.FieldDescriptorProto{field(name+"_value", n, typ, opt), field(name+"_list", n+1, typ, rep)} {
			switch typ {
			case descriptorpb.FieldDescriptorProto_TYPE_MESSAGE:
				f.TypeName = proto.String(".pbjsontest.All")
			case descriptorpb.FieldDescriptorProto_TYPE_ENUM:
				f.TypeName = proto.String(".pbjsontest.Color")
			}
			fields = append(fields, f)
		}
		n += 2
	}
	choice := int32(0)
	optional := field("maybe", n, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt)
	optional.Proto3Optional, optional.OneofIndex = proto.Bool(true), proto.Int32(1)
	fields = append(fields,
		&descriptorpb.FieldDescriptorProto{Name: proto.String("pick_text"), Number: proto.Int32(n + 1), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), Label: opt.Enum(), OneofIndex: &choice},
		&descriptorpb.FieldDescriptorProto{Name: proto.String("pick_all"), Number: proto.Int32(n + 2), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), Label: opt.Enum(), OneofIndex: &choice, TypeName: proto.String(".pbjsontest.All")},
		optional,
		&descriptorpb.FieldDescriptorProto{Name: proto.String("by_name"), Number: proto.Int32(n + 3), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), Label: rep.Enum(), TypeName: proto.String(".pbjsontest.All.ByNameEntry")},
		&descriptorpb.FieldDescriptorProto{Name: proto.String("by_number"), Number: proto.Int32(n + 4), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), Label: rep.Enum(), TypeName: proto.String(".pbjsontest.All.ByNumberEntry")},
		&descriptorpb.FieldDescriptorProto{Name: proto.String("by_flag"), Number: proto.Int32(n + 5), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), Label: rep.Enum(), TypeName: proto.String(".pbjsontest.All.ByFlagEntry")},
		&descriptorpb.FieldDescriptorProto{Name: proto.String("when"), Number: proto.Int32(n + 6), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), Label: opt.Enum(), TypeName: proto.String(".google.protobuf.Timestamp")},
		&descriptorpb.FieldDescriptorProto{Name: proto.String("data"), Number: proto.Int32(n + 7), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), Label: opt.Enum(), TypeName: proto.String(".google.protobuf.Struct")},
	)
	entry := func(name string, key descriptorpb.FieldDescriptorProto_Type) *descriptorpb.DescriptorProto {
		value := field("value", 2, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, opt)
		value.TypeName = proto.String(".google.protobuf.Value")
		return &descriptorpb.DescriptorProto{Name: proto.String(name), Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
			Field: []*descriptorpb.FieldDescriptorProto{field("key", 1, key, opt), value}}
	}
	file := &descriptorpb.FileDescriptorProto{
		Name: proto.String("pbjsontest.proto"), Package: proto.String("pbjsontest"), Syntax: proto.String("proto3"),
		Dependency: []string{"google/protobuf/struct.proto", "google/protobuf/timestamp.proto"},
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("Color"), Value: []*descriptorpb.EnumValueDescriptorProto{
			{Name: proto.String("COLOR_UNSPECIFIED"), Number: proto.Int32(0)}, {Name: proto.String("RED"), Number: proto.Int32(1)}}}},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("All"), Field: fields,
			OneofDecl:  []*descriptorpb.OneofDescriptorProto{{Name: proto.String("pick")}, {Name: proto.String("_maybe")}},
			NestedType: []*descriptorpb.DescriptorProto{entry("ByNameEntry", descriptorpb.FieldDescriptorProto_TYPE_STRING), entry("ByNumberEntry", descriptorpb.FieldDescriptorProto_TYPE_SINT64), entry("ByFlagEntry", descriptorpb.FieldDescriptorProto_TYPE_BOOL)}}},
	}
	fd, err := protodesc.NewFile(file, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().Get(0)
}

// TestEveryKindMatchesProtojson covers the kinds the API does not use yet:
// floats, 64-bit integers (strings in JSON), bytes, unknown enum numbers,
// maps keyed by numbers and booleans, oneofs.
func TestEveryKindMatchesProtojson(t *testing.T) {
	md := allKinds(t)
	g := generator{rnd: rand.New(rand.NewPCG(7, 11))}
	for range 1000 {
		m := dynamicpb.NewMessage(md)
		g.fill(m, 0)
		check(t, m)
	}
}

// TestRefusalsAndDeclines: what protojson refuses, Append declines, and the
// well-known types it leaves to protojson are declined whole.
func TestRefusalsAndDeclines(t *testing.T) {
	refused := []proto.Message{
		structpb.NewStringValue("bad \xff utf-8"),
		structpb.NewNumberValue(math.NaN()),
		structpb.NewNumberValue(math.Inf(-1)),
		&structpb.Value{},
		&timestamppb.Timestamp{Seconds: maxTimestampSeconds + 1},
		&timestamppb.Timestamp{Seconds: minTimestampSeconds - 1},
		&timestamppb.Timestamp{Nanos: -1},
		&timestamppb.Timestamp{Nanos: 1_000_000_000},
		&durationpb.Duration{Seconds: maxDurationSeconds + 1},
		&durationpb.Duration{Seconds: -maxDurationSeconds - 1},
		&durationpb.Duration{Seconds: 1, Nanos: -1},
		&durationpb.Duration{Seconds: -1, Nanos: 1},
		&durationpb.Duration{Nanos: 1_000_000_000},
		&durationpb.Duration{Nanos: -1_000_000_000},
	}
	for _, m := range refused {
		if _, err := want(m); err == nil {
			t.Fatalf("protojson writes %v; the case tests nothing", m)
		}
		if got, ok := Append(nil, m); ok {
			t.Errorf("Append wrote %s for %v, which protojson refuses", got, m)
		}
	}
	any, err := anypb.New(structpb.NewBoolValue(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []proto.Message{wrapperspb.String("x"), any} {
		if got, ok := Append(nil, m); ok {
			t.Errorf("Append wrote %s for %T, which it leaves to protojson", got, m)
		}
	}
	for _, ts := range []*timestamppb.Timestamp{{}, {Seconds: maxTimestampSeconds, Nanos: 999_999_999}, {Seconds: minTimestampSeconds},
		{Seconds: 1, Nanos: 5_000_000}, {Seconds: 1, Nanos: 120_000}, {Seconds: 1, Nanos: 7}} {
		check(t, ts)
	}
	for _, d := range []*durationpb.Duration{{}, {Seconds: 30}, {Nanos: -1}, {Seconds: -3, Nanos: -500_000_000}, {Seconds: 1, Nanos: 120_000},
		{Seconds: maxDurationSeconds, Nanos: 999_999_999}, {Seconds: -maxDurationSeconds, Nanos: -999_999_999}} {
		check(t, d)
	}
}

// generator fills messages with random values.
type generator struct{ rnd *rand.Rand }

// tricky strings: everything JSON escapes, what it must not, and the
// multi-byte forms (U+FFFD written validly is not an error).
var tricky = []string{"", "plain", `q"uote`, `back\slash`, "\x00nul", "\x01\x1f\x7f", "tab\tnl\nret\rff\fbs\b",
	"é✓𝄞", "\u2028\u2029", "</script>&amp;", "\ufffd", "res_01JABCDEFGHJKMNPQRSTVWXYZ0"}

// floats at the edges of fixed and exponent notation, and float32's.
var floats = []float64{0, math.Copysign(0, -1), 1, -2.5, 0.1, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789.125, math.MaxFloat64,
	math.SmallestNonzeroFloat64, float64(float32(1e-6)), float64(float32(1e21)), float64(math.MaxFloat32), 1.0 / 3, math.NaN(), math.Inf(1), math.Inf(-1)}

func (g generator) str() string {
	if g.rnd.IntN(4) == 0 {
		var b strings.Builder
		for range g.rnd.IntN(12) {
			b.WriteRune(rune(g.rnd.IntN(0x2100)))
		}
		return b.String()
	}
	return tricky[g.rnd.IntN(len(tricky))]
}

func (g generator) fill(m protoreflect.Message, depth int) {
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		m.Set(md.Fields().ByName("seconds"), protoreflect.ValueOfInt64(g.rnd.Int64N(maxTimestampSeconds-minTimestampSeconds)+minTimestampSeconds))
		nanos := []int32{0, 1, 999_999_999, 5_000_000, 120_000, g.rnd.Int32N(1_000_000_000)}
		m.Set(md.Fields().ByName("nanos"), protoreflect.ValueOfInt32(nanos[g.rnd.IntN(len(nanos))]))
		return
	case "google.protobuf.Duration":
		secs := g.rnd.Int64N(2*maxDurationSeconds+1) - maxDurationSeconds
		nanos := []int32{0, 1, 999_999_999, 500_000_000, 120_000, g.rnd.Int32N(1_000_000_000)}[g.rnd.IntN(6)]
		if secs < 0 || secs == 0 && g.rnd.IntN(2) == 0 {
			nanos = -nanos // the sign of the seconds, or either when they are 0
		}
		m.Set(md.Fields().ByName("seconds"), protoreflect.ValueOfInt64(secs))
		m.Set(md.Fields().ByName("nanos"), protoreflect.ValueOfInt32(nanos))
		return
	case "google.protobuf.Value":
		g.fillValue(m, depth)
		return
	}
	for i := range md.Fields().Len() {
		fd := md.Fields().Get(i)
		if g.rnd.IntN(3) == 0 || fd.Kind() == protoreflect.MessageKind && depth >= 3 {
			continue // unset: the unpopulated forms
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range g.rnd.IntN(4) {
				l.Append(g.value(fd, l.NewElement(), depth))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range g.rnd.IntN(4) {
				mp.Set(g.value(fd.MapKey(), protoreflect.Value{}, depth).MapKey(), g.value(fd.MapValue(), mp.NewValue(), depth))
			}
		default:
			var el protoreflect.Value
			if fd.Message() != nil {
				el = m.NewField(fd)
			}
			m.Set(fd, g.value(fd, el, depth))
		}
	}
}

// value is a random value for fd; el is a new element when fd holds
// messages.
func (g generator) value(fd protoreflect.FieldDescriptor, el protoreflect.Value, depth int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(g.rnd.IntN(2) == 0)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(g.str())
	case protoreflect.BytesKind:
		b := make([]byte, g.rnd.IntN(9))
		for i := range b {
			b[i] = byte(g.rnd.Uint32())
		}
		return protoreflect.ValueOfBytes(b)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(g.rnd.Uint32()))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(g.rnd.Uint32())
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(g.rnd.Uint64()))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(g.rnd.Uint64())
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(g.float()))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(g.float())
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(g.rnd.IntN(4))) // 2 and 3 have no name
	}
	g.fill(el.Message(), depth+1)
	return el
}

func (g generator) float() float64 {
	if g.rnd.IntN(2) == 0 {
		return floats[g.rnd.IntN(len(floats))]
	}
	return math.Float64frombits(g.rnd.Uint64())
}

// fillValue sets one of a Value's kinds; NaN and infinities are left out
// here (TestRefusalsAndDeclines covers them).
func (g generator) fillValue(m protoreflect.Message, depth int) {
	var v *structpb.Value
	switch k := g.rnd.IntN(6); {
	case k == 0 || depth >= 3:
		v = structpb.NewNullValue()
	case k == 1:
		f := floats[g.rnd.IntN(len(floats))]
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = 42
		}
		v = structpb.NewNumberValue(f)
	case k == 2:
		v = structpb.NewStringValue(g.str())
	case k == 3:
		v = structpb.NewBoolValue(g.rnd.IntN(2) == 0)
	case k == 4:
		s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for range g.rnd.IntN(4) {
			inner := &structpb.Value{}
			g.fillValue(inner.ProtoReflect(), depth+1)
			s.Fields[g.str()] = inner
		}
		v = structpb.NewStructValue(s)
	default:
		l := &structpb.ListValue{}
		for range g.rnd.IntN(4) {
			inner := &structpb.Value{}
			g.fillValue(inner.ProtoReflect(), depth+1)
			l.Values = append(l.Values, inner)
		}
		v = structpb.NewListValue(l)
	}
	// Through the wire format: a dynamic message's Value is not a structpb one.
	data, err := proto.Marshal(v)
	if err == nil {
		err = proto.Unmarshal(data, m.Interface())
	}
	if err != nil {
		panic(fmt.Sprintf("copy a value: %v", err)) //nolint:forbidigo // a test helper's impossible case
	}
}

// FuzzStrings holds string escaping to protojson's for any input, valid
// UTF-8 or not.
func FuzzStrings(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Add("bad \xff utf-8")
	f.Fuzz(func(t *testing.T, s string) {
		check(t, structpb.NewStringValue(s))
		check(t, &structpb.Struct{Fields: map[string]*structpb.Value{s: structpb.NewBoolValue(true)}})
	})
}
