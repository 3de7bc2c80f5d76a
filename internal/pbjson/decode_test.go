package pbjson

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
)

// checkDecode holds Unmarshal to protojson for data: where Unmarshal takes
// it, protojson takes it too and decodes the same message. It reports
// whether Unmarshal took it.
func checkDecode(t testing.TB, mt protoreflect.MessageType, data []byte) bool {
	t.Helper()
	ref := mt.New().Interface()
	err := protojson.Unmarshal(data, ref)
	got := mt.New().Interface()
	ok := Unmarshal(data, got)
	switch {
	case ok && err != nil:
		t.Fatalf("%s: protojson refuses %q (%v), Unmarshal took it as %v", mt.Descriptor().FullName(), data, err, got)
	case ok && !proto.Equal(got, ref):
		t.Fatalf("%s: %q:\n got %v\nwant %v", mt.Descriptor().FullName(), data, got, ref)
	}
	return ok
}

// leftToProtojson reports whether m holds a value whose JSON Unmarshal
// leaves to protojson: a Timestamp, a Duration, bytes, an enum without a
// name, a float written as a string (NaN and the infinities), or a map
// keyed by something other than strings or by a string JSON escapes.
func leftToProtojson(m protoreflect.Message) bool {
	switch m.Descriptor().FullName() {
	case "google.protobuf.Timestamp", "google.protobuf.Duration":
		return true
	}
	left := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			for i := range v.List().Len() {
				left = left || leftInValue(fd, v.List().Get(i))
			}
		case fd.IsMap():
			left = left || fd.MapKey().Kind() != protoreflect.StringKind
			v.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				left = left || escaped(k.String()) || leftInValue(fd.MapValue(), v)
				return !left
			})
		default:
			left = leftInValue(fd, v)
		}
		return !left
	})
	return left
}

// escaped reports whether JSON writes s with an escape.
func escaped(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == '"' || r == '\\' })
}

func leftInValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	switch fd.Kind() {
	case protoreflect.BytesKind:
		return true
	case protoreflect.EnumKind:
		return fd.Enum().Values().ByNumber(v.Enum()) == nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0)
	case protoreflect.MessageKind:
		return leftToProtojson(v.Message())
	}
	return false
}

// TestDecodeMatchesProtojson decodes the API's JSON of random messages of
// every API type and of a type with every kind of field: Unmarshal decodes
// each as protojson does, and takes every one but those holding what it
// leaves to protojson.
func TestDecodeMatchesProtojson(t *testing.T) {
	types := []protoreflect.MessageType{dynamicpb.NewMessageType(allKinds(t))}
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if strings.HasPrefix(string(mt.Descriptor().FullName()), "assessd.v1.") {
			types = append(types, mt)
		}
		return true
	})
	g := generator{rnd: rand.New(rand.NewPCG(20261127, 2))}
	taken := 0
	for _, mt := range types {
		for range 40 {
			m := mt.New()
			g.fill(m, 0)
			data, err := reference.Marshal(m.Interface())
			if err != nil {
				continue // an unwritable message (a Value without a kind)
			}
			ok := checkDecode(t, mt, data)
			if want := !leftToProtojson(m); ok != want {
				t.Fatalf("%s: Unmarshal took %s: %v, want %v", mt.Descriptor().FullName(), data, ok, want)
			}
			if ok {
				taken++
			}
		}
	}
	t.Logf("Unmarshal took %d messages of %d types", taken, len(types))
}

// decodeCases are inputs at the edges of what Unmarshal takes, each with
// whether it takes it; protojson is the judge of what they decode to.
var decodeCases = []struct {
	json string
	take bool
}{
	{`{}`, true},
	{` { } `, true},
	{`{"stringValue":"a","string_value":"b"}`, false}, // one field twice
	{`{"string_value":"x"}`, true},
	{`{"stringValue":null,"stringValue":"b"}`, false},
	{`{"stringValue":"a",}`, false},
	{`{"stringValue":"a"} x`, false},
	{`{"stringValue":"a"}{}`, false},
	{`{"nope":1}`, false},
	{`{"strin\u0067Value":"x"}`, false},
	{"{\"stringValue\":\"tab\t\"}", false}, // a raw control character
	{`{"stringValue":"\"\\\/\b\f\n\r\t\u00e9\u2028"}`, true},
	{`{"stringValue":"\ud834\udd1e"}`, false},
	{`{"stringValue":"\ud834"}`, false},
	{`{"stringValue":"\x"}`, false},
	{"{\"stringValue\":\"\xff\"}", false},
	{`{"stringValue":"é✓𝄞"}`, true},
	{`{"int32Value":-2147483648,"uint32Value":4294967295}`, true},
	{`{"int32Value":2147483648}`, false},
	{`{"int32Value":"5"}`, false},
	{`{"int32Value":1.0}`, false},
	{`{"int32Value":1e2}`, false},
	{`{"int32Value":01}`, false},
	{`{"int32Value":-}`, false},
	{`{"int64Value":"-9223372036854775808","uint64Value":"18446744073709551615","sint64Value":12}`, true},
	{`{"int64Value":" 1"}`, false},
	{`{"int64Value":"1 "}`, false},
	{`{"int64Value":"1.5"}`, false},
	{`{"doubleValue":-0.5e-3,"floatValue":3.4028235e+38}`, true},
	{`{"floatValue":3.5e38}`, false},
	{`{"doubleValue":1e400}`, false},
	{`{"doubleValue":.5}`, false},
	{`{"doubleValue":1.}`, false},
	{`{"doubleValue":"NaN"}`, false},
	{`{"boolValue":true,"boolList":[false,true]}`, true},
	{`{"boolValue":tru}`, false},
	{`{"boolValue":null}`, true},
	{`{"boolList":null,"messageValue":null,"data":null}`, true},
	{`{"boolList":[null]}`, false},
	{`{"enumValue":"RED","enumList":["COLOR_UNSPECIFIED"]}`, true},
	{`{"enumValue":1}`, false},
	{`{"enumValue":"BLUE"}`, false},
	{`{"bytesValue":"AQI="}`, false},
	{`{"pickText":"a","pickAll":{}}`, false},
	{`{"pickText":null,"pickAll":{}}`, true},
	{`{"maybe":""}`, true},
	{`{"byName":{"a":1,"b":null,"c":[1,"x",{"d":false}]}}`, true},
	{`{"byName":{"a":1,"a":2}}`, false},
	{`{"byNumber":{"1":true}}`, false},
	{`{"data":{"k":{"nested":[[],{}]}}}`, true},
	{`{"data":[]}`, false},
	{`{"when":"2026-11-27T12:00:00Z"}`, false},
	{`{"messageList":[{"stringValue":"a"},{}]}`, true},
	{`{"messageList":[null]}`, false},
	{`{"data":{"deep":` + strings.Repeat(`[`, maxDepth+2) + strings.Repeat(`]`, maxDepth+2) + `}}`, false},
	{`[]`, false},
	{``, false},
	{`{"stringValue":"` + strings.Repeat("long ", 40) + `"}`, true},
	{`{"stringValue":"` + strings.Repeat("é\\n", 10000) + `"}`, true},
	{`{"messageList":[{"stringList":["` + strings.Repeat("x", 200) + `"]}]}`, true},
	{`{"byName":{"a\"b":1}}`, false},
	{`{"byName":` + object(20, false) + `}`, true},
	{`{"byName":` + object(20, true) + `}`, false},
	{`{"byName":` + object(maxKeys, false) + `}`, true},
	{`{"byName":` + object(maxKeys+1, false) + `}`, false},
}

// object is a JSON object of n keys, the last a repeat of the first when
// repeatFirst.
func object(n int, repeatFirst bool) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d":%d`, i, i)
	}
	if repeatFirst {
		keys[n-1] = `"k0":0`
	}
	return "{" + strings.Join(keys, ",") + "}"
}

func TestDecodeEdges(t *testing.T) {
	mt := dynamicpb.NewMessageType(allKinds(t))
	for _, c := range decodeCases {
		if got := checkDecode(t, mt, []byte(c.json)); got != c.take {
			t.Errorf("Unmarshal took %s: %v, want %v", c.json, got, c.take)
		}
	}
}

// TestDecodeSubmission: the request of the API's hottest write is
// decoded here, not by protojson.
func TestDecodeSubmission(t *testing.T) {
	body := []byte(`{"userId":"usr_1","answers":[{"questionId":"qst_1","value":true},` +
		`{"questionId":"qst_2","value":"Paris","files":["https://cdn.example/a.png"]},{"questionId":"qst_3","value":null},` +
		`{"questionId":"qst_4","value":["a","b"]},{"questionId":"qst_5","value":{"x":1.5}}],"examId":"exm_1"}`)
	var got v1.SubmitResultRequest
	if !checkDecode(t, (&got).ProtoReflect().Type(), body) {
		t.Fatalf("Unmarshal declined a submission: %s", body)
	}
}

// FuzzUnmarshal holds Unmarshal to protojson for any input.
func FuzzUnmarshal(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c.json))
	}
	mt := dynamicpb.NewMessageType(allKinds(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, mt, data)
	})
}
