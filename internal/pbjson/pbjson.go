// Package pbjson writes protobuf messages as the API's JSON: protojson's
// mapping with every field emitted (EmitUnpopulated), without whitespace.
// Request bodies are protojson's to read: a decoder of our own paid less
// than this host's noise end to end (decision 0139, removed by 0199).
//
// protojson is the reference; it is slow to encode
// because it collects and sorts every message's fields on every call
// (a quarter of its time) and formats timestamps through time.Format. A
// submission's response took 10 % of the request's CPU and a page of 100
// results 9-11 ms. This package walks each message type's fields in a plan
// computed once, which yields the same bytes in a fraction of the time.
//
// It covers what the API's messages use: scalars, enums, bytes, repeated
// and map fields, oneofs and proto3 optional fields, and the well-known
// types Timestamp, Duration, Struct, Value and ListValue. Anything else
// (Any, wrappers, FieldMask, extensions), and any value protojson refuses
// (invalid UTF-8, a NaN in a Value, a timestamp or duration out of range),
// makes Append decline, so that the caller lets protojson write the
// message, or report the error, exactly as before. The differential tests
// hold the output to protojson's byte for byte.
package pbjson

import (
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// Append appends m's JSON to b. ok is false when m holds a type or a value
// this package leaves to protojson; b's contents past its length are then
// undefined.
func Append(b []byte, m proto.Message) (out []byte, ok bool) {
	rm := m.ProtoReflect()
	p := planOf(rm.Descriptor())
	if cap(b) == 0 {
		// Sized like this type's last output: one allocation, not a dozen
		// as the buffer grows. After a large page a small one of the same
		// type allocates as much once; capping the hint instead made a
		// page of 100 results twice as slow (append grows large buffers
		// by a quarter at a time).
		b = make([]byte, 0, p.lastSize.Load()+64)
	}
	start := len(b)
	if b, ok = appendMessage(b, rm, p); ok {
		p.lastSize.Store(int64(len(b) - start))
	}
	return b, ok
}

// shape says how a message type is written.
type shape uint8

const (
	fieldsShape shape = iota // an object of its fields
	timestampShape
	durationShape
	valueShape
	structShape
	listValueShape
	declined // left to protojson
)

// plan is how one message type is written, computed once per type.
type plan struct {
	shape shape
	// fields in declaration order, protojson's order; a field's index
	// here is its descriptor's Index().
	fields []field
	// lastSize is the length of the last JSON written for this type.
	lastSize atomic.Int64
}

// field is one field of a plan.
type field struct {
	fd protoreflect.FieldDescriptor
	// name is the quoted JSON name and its colon.
	name string
	// inOneof fields (proto3 optional ones included) are left out while
	// unset; other fields with presence (messages) are written as null.
	inOneof, presence bool
	// mapValue describes a map field's values.
	mapValue *field
	// message is the plan of the field's message type, looked up on first
	// use (types may contain themselves).
	message atomic.Pointer[plan]
}

// messagePlan is the plan of f's message type.
func (f *field) messagePlan() *plan {
	if p := f.message.Load(); p != nil {
		return p
	}
	p := planOf(f.fd.Message())
	f.message.Store(p)
	return p
}

// plans holds a plan per message descriptor for the life of the process:
// the API's generated types, a fixed set (descriptors built at run time,
// one per request, would grow it without bound).
var plans sync.Map // protoreflect.MessageDescriptor → *plan

func planOf(md protoreflect.MessageDescriptor) *plan {
	if p, ok := plans.Load(md); ok {
		return p.(*plan)
	}
	p := &plan{shape: shapeOf(md)}
	fds := md.Fields()
	p.fields = make([]field, fds.Len())
	for i := range p.fields {
		fd := fds.Get(i)
		name, _ := appendString(nil, fd.JSONName())
		f := &p.fields[i]
		f.fd, f.name, f.inOneof, f.presence = fd, string(append(name, ':')), fd.ContainingOneof() != nil, fd.HasPresence()
		if fd.IsMap() {
			f.mapValue = &field{fd: fd.MapValue()}
		}
	}
	actual, _ := plans.LoadOrStore(md, p)
	return actual.(*plan)
}

func shapeOf(md protoreflect.MessageDescriptor) shape {
	if md.ExtensionRanges().Len() > 0 {
		return declined // extensions and MessageSets
	}
	if md.FullName().Parent() != "google.protobuf" {
		return fieldsShape
	}
	switch md.Name() {
	case "Timestamp":
		return timestampShape
	case "Duration":
		return durationShape
	case "Value":
		return valueShape
	case "Struct":
		return structShape
	case "ListValue":
		return listValueShape
	case "Empty":
		return fieldsShape // no special mapping: {}
	}
	return declined // Any, wrappers, FieldMask, descriptors
}

func appendMessage(b []byte, m protoreflect.Message, p *plan) ([]byte, bool) {
	switch p.shape {
	case timestampShape:
		return appendTimestamp(b, m.Get(p.fields[0].fd).Int(), m.Get(p.fields[1].fd).Int())
	case durationShape:
		return appendDuration(b, m.Get(p.fields[0].fd).Int(), m.Get(p.fields[1].fd).Int())
	case valueShape:
		if v, ok := m.Interface().(*structpb.Value); ok {
			return appendStructValue(b, v)
		}
		return appendValue(b, m, p)
	case structShape:
		if s, ok := m.Interface().(*structpb.Struct); ok {
			return appendStructFields(b, s.GetFields())
		}
		return appendMap(b, m.Get(p.fields[0].fd).Map(), &p.fields[0])
	case listValueShape:
		if l, ok := m.Interface().(*structpb.ListValue); ok {
			return appendStructList(b, l.GetValues())
		}
		return appendList(b, m.Get(p.fields[0].fd).List(), &p.fields[0])
	case declined:
		return b, false
	}
	b = append(b, '{')
	first := true
	for i := range p.fields {
		f := &p.fields[i]
		if (f.inOneof || f.presence) && !m.Has(f.fd) {
			if f.inOneof {
				continue
			}
			b = appendName(b, f.name, &first)
			b = append(b, "null"...)
			continue
		}
		b = appendName(b, f.name, &first)
		var ok bool
		switch {
		// An empty list or map is written without Get, which allocates a
		// view of it.
		case f.fd.IsList() && !m.Has(f.fd):
			b, ok = append(b, '[', ']'), true
		case f.fd.IsMap() && !m.Has(f.fd):
			b, ok = append(b, '{', '}'), true
		case f.fd.IsList():
			b, ok = appendList(b, m.Get(f.fd).List(), f)
		case f.fd.IsMap():
			b, ok = appendMap(b, m.Get(f.fd).Map(), f)
		default:
			b, ok = appendSingular(b, m.Get(f.fd), f)
		}
		if !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendName(b []byte, name string, first *bool) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	return append(b, name...)
}

func appendList(b []byte, l protoreflect.List, f *field) ([]byte, bool) {
	b = append(b, '[')
	for i := range l.Len() {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendSingular(b, l.Get(i), f); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendMap writes the entries ordered by key, as protojson does: false
// before true, numbers by value, strings bytewise.
func appendMap(b []byte, mp protoreflect.Map, f *field) ([]byte, bool) {
	// One Range collects the entries with their values, so that writing
	// them in key order needs no lookup, and keys compare as the kind the
	// map declares, without boxing them.
	type entry struct {
		k protoreflect.MapKey
		v protoreflect.Value
	}
	entries := make([]entry, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		entries = append(entries, entry{k, v})
		return true
	})
	kind := f.fd.MapKey().Kind()
	slices.SortFunc(entries, func(x, y entry) int { return compareKeys(kind, x.k, y.k) })
	b = append(b, '{')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendString(b, e.k.String()); !ok {
			return b, false
		}
		b = append(b, ':')
		if b, ok = appendSingular(b, e.v, f.mapValue); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// compareKeys orders map keys of the given kind as protojson does.
func compareKeys(kind protoreflect.Kind, x, y protoreflect.MapKey) int {
	switch kind {
	case protoreflect.BoolKind:
		return cmpOrdered(boolOrder(x.Bool()), boolOrder(y.Bool()))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return cmpOrdered(x.Int(), y.Int())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return cmpOrdered(x.Uint(), y.Uint())
	}
	return cmpOrdered(x.String(), y.String())
}

// boolOrder puts false before true.
func boolOrder(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

func cmpOrdered[T int64 | uint64 | string](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func appendSingular(b []byte, v protoreflect.Value, f *field) ([]byte, bool) {
	if !v.IsValid() {
		return append(b, "null"...), true
	}
	fd := f.fd
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), true
	case protoreflect.StringKind:
		return appendString(b, v.String())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.AppendInt(b, v.Int(), 10), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(b, v.Uint(), 10), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		// 64-bit integers are strings: JavaScript's numbers cannot hold them.
		b = strconv.AppendInt(append(b, '"'), v.Int(), 10)
		return append(b, '"'), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		b = strconv.AppendUint(append(b, '"'), v.Uint(), 10)
		return append(b, '"'), true
	case protoreflect.FloatKind:
		return appendFloat(b, v.Float(), 32), true
	case protoreflect.DoubleKind:
		return appendFloat(b, v.Float(), 64), true
	case protoreflect.BytesKind:
		b = base64.StdEncoding.AppendEncode(append(b, '"'), v.Bytes())
		return append(b, '"'), true
	case protoreflect.EnumKind:
		if fd.Enum().FullName() == "google.protobuf.NullValue" {
			return append(b, "null"...), true
		}
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return appendString(b, string(ev.Name()))
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10), true
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return appendMessage(b, v.Message(), f.messagePlan())
	}
	return b, false
}

// appendFloat writes a number as JavaScript would print it (encoding/json's
// rule): fixed notation, exponent notation below 1e-6 and from 1e21 with a
// one-digit exponent unpadded; NaN and the infinities as strings.
func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		// A float's bounds are compared as floats: float32(1e-6) is not 1e-6.
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// e-07 → e-7
		if n := len(b); b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString writes s as a JSON string the way protojson does: quotes,
// backslashes and control characters escaped, everything else as it is.
// Invalid UTF-8 is refused.
func appendString(b []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return b, false
	}
	b = append(b, '"')
	from := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= ' ' && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[from:i]...)
		from = i + 1
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	b = append(b, s[from:]...)
	return append(b, '"'), true
}

// The range of a Timestamp: years 1 to 9999.
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300799
)

// appendTimestamp writes RFC 3339 in UTC with 0, 3, 6 or 9 fractional
// digits, the fewest that keep the value.
func appendTimestamp(b []byte, secs, nanos int64) ([]byte, bool) {
	if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos > 999_999_999 {
		return b, false
	}
	t := time.Unix(secs, 0).UTC()
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	b = append(b, '"')
	b = appendDigits(b, int64(year), 4)
	b = appendDigits(append(b, '-'), int64(month), 2)
	b = appendDigits(append(b, '-'), int64(day), 2)
	b = appendDigits(append(b, 'T'), int64(hour), 2)
	b = appendDigits(append(b, ':'), int64(minute), 2)
	b = appendDigits(append(b, ':'), int64(second), 2)
	return append(appendFraction(b, nanos), 'Z', '"'), true
}

// appendFraction writes nanos (0 to 999,999,999) as a fraction of a
// second with 0, 3, 6 or 9 digits, the fewest that keep the value.
func appendFraction(b []byte, nanos int64) []byte {
	if nanos == 0 {
		return b
	}
	digits := 9
	for digits > 3 && nanos%1000 == 0 {
		nanos /= 1000
		digits -= 3
	}
	return appendDigits(append(b, '.'), nanos, digits)
}

// maxDurationSeconds is the range of a Duration: about 10,000 years either
// way.
const maxDurationSeconds = 315_576_000_000

// appendDuration writes seconds with a fraction and the suffix s, e.g.
// "-1.500s"; protojson refuses seconds out of range and nanos out of range
// or of the other sign.
func appendDuration(b []byte, secs, nanos int64) ([]byte, bool) {
	if secs < -maxDurationSeconds || secs > maxDurationSeconds || nanos <= -1e9 || nanos >= 1e9 ||
		(secs > 0 && nanos < 0) || (secs < 0 && nanos > 0) {
		return b, false
	}
	b = append(b, '"')
	if secs < 0 || nanos < 0 {
		b, secs, nanos = append(b, '-'), -secs, -nanos
	}
	b = strconv.AppendInt(b, secs, 10)
	return append(appendFraction(b, nanos), 's', '"'), true
}

// appendDigits writes v, which is not negative, in exactly width digits.
func appendDigits(b []byte, v int64, width int) []byte {
	var d [9]byte
	for i := width - 1; i >= 0; i-- {
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, d[:width]...)
}

// The generated Struct, Value and ListValue, the API's free-form JSON
// (metadata, question configs, answers), are written from their Go fields:
// through protoreflect every key and string would be boxed on the way.
// Other implementations of them (dynamic messages) take the reflective path.

// appendStructValue writes v as the JSON value it holds.
func appendStructValue(b []byte, v *structpb.Value) ([]byte, bool) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return append(b, "null"...), true
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return b, false // JSON cannot hold them; protojson refuses
		}
		return appendFloat(b, k.NumberValue, 64), true
	case *structpb.Value_StringValue:
		return appendString(b, k.StringValue)
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(b, k.BoolValue), true
	case *structpb.Value_StructValue:
		if k.StructValue != nil {
			return appendStructFields(b, k.StructValue.GetFields())
		}
	case *structpb.Value_ListValue:
		if k.ListValue != nil {
			return appendStructList(b, k.ListValue.GetValues())
		}
	}
	return b, false // no kind, which protojson refuses, or a nil one: left to protojson
}

// appendStructFields writes a Struct's fields as an object, keys in
// protojson's order.
func appendStructFields(b []byte, fields map[string]*structpb.Value) ([]byte, bool) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendString(b, k); !ok {
			return b, false
		}
		b = append(b, ':')
		if b, ok = appendStructValue(b, fields[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendStructList writes a ListValue's values as an array.
func appendStructList(b []byte, values []*structpb.Value) ([]byte, bool) {
	b = append(b, '[')
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendStructValue(b, v); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendValue writes a google.protobuf.Value as the JSON value it holds.
func appendValue(b []byte, m protoreflect.Message, p *plan) ([]byte, bool) {
	fd := m.WhichOneof(p.fields[0].fd.ContainingOneof())
	if fd == nil {
		return b, false // protojson refuses a Value without a kind
	}
	v := m.Get(fd)
	if fd.Kind() == protoreflect.DoubleKind && (math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0)) {
		return b, false // and NaN or an infinity, which JSON cannot hold
	}
	return appendSingular(b, v, &p.fields[fd.Index()])
}
