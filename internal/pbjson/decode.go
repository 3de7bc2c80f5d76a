package pbjson

import (
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Unmarshal decodes data, a JSON object, into m as protojson would: it
// clears m, takes fields by their JSON or proto names, skips a null
// field, and refuses unknown and repeated fields and a second field of a
// oneof. ok is false when data holds anything it leaves to protojson: a
// syntax or type error, a number written as a string or with a fraction
// or exponent where an integer belongs, an enum by number, bytes, a
// Timestamp or Duration value, a map key other than a string or with an
// escape, an escaped field name, a surrogate escape, or nesting deeper
// than maxDepth. m's contents are then undefined, and the caller lets
// protojson decode data or report why it cannot, exactly as before.
//
// It translates the JSON to the protobuf wire format and lets
// proto.Unmarshal build m: protojson's tokenizer and protoreflect's
// setters allocated on every string and list element, 104 times for a
// submission of ten answers, and a REST request with path variables is
// decoded twice (by Vanguard, and by the Connect handler once Vanguard has
// re-encoded it).
func Unmarshal(data []byte, m proto.Message) (ok bool) {
	buf := buffers.Get().(*[]byte)
	defer buffers.Put(buf)
	d := decoder{data: data, out: (*buf)[:0]}
	rm := m.ProtoReflect()
	ok = d.message(planOf(rm.Descriptor()), 0)
	d.skipSpace()
	ok = ok && d.pos == len(d.data) && proto.Unmarshal(d.out, m) == nil
	if cap(d.out) <= maxPooled {
		*buf = d.out
	}
	return ok
}

// buffers holds the wire-format buffers of decodes; proto.Unmarshal
// copies out what it keeps.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooled is the largest buffer kept for reuse, so that one large body
// does not pin its buffer.
const maxPooled = 64 << 10

// maxDepth bounds the nesting of messages, lists and objects the decoder
// follows; deeper input goes to protojson, whose limit is far higher.
const maxDepth = 64

// maxKeys bounds an object decoded into a map: its keys are checked for
// repeats pairwise.
const maxKeys = 256

// decoder reads JSON from data and writes the message in the protobuf
// wire format to out.
type decoder struct {
	data []byte
	pos  int
	out  []byte
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// next is the next byte after whitespace, 0 at the end.
func (d *decoder) next() byte {
	d.skipSpace()
	if d.pos == len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

// consume skips c, the next byte after whitespace, and reports whether it
// was there.
func (d *decoder) consume(c byte) bool {
	if d.next() != c {
		return false
	}
	d.pos++
	return true
}

// literal skips word (null, true or false) if it comes next.
func (d *decoder) literal(word string) bool {
	d.skipSpace()
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return false
	}
	d.pos += len(word)
	return true
}

// openLength starts a length-delimited value, whose length closeLength
// writes once it is known.
func (d *decoder) openLength() int {
	d.out = append(d.out, 0)
	return len(d.out)
}

func (d *decoder) closeLength(start int) {
	n := len(d.out) - start
	if n < 0x80 {
		d.out[start-1] = byte(n)
		return
	}
	// Make room for a longer length and move the value behind it.
	size := protowire.SizeVarint(uint64(n))
	d.out = append(d.out, make([]byte, size-1)...)
	copy(d.out[start-1+size:], d.out[start:start+n])
	protowire.AppendVarint(d.out[:start-1], uint64(n))
}

func (d *decoder) tag(fd protoreflect.FieldDescriptor, typ protowire.Type) {
	d.out = protowire.AppendTag(d.out, fd.Number(), typ)
}

// message writes the fields of p's type.
func (d *decoder) message(p *plan, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch p.shape {
	case valueShape:
		return d.value(p, depth)
	case structShape:
		return d.mapEntries(&p.fields[0], depth)
	case listValueShape:
		return d.list(&p.fields[0], depth)
	case fieldsShape:
	default:
		return false // Timestamp, Duration and what pbjson declines
	}
	if len(p.fields) > 64 || !d.consume('{') {
		return false // seen is one word
	}
	if d.consume('}') {
		return true
	}
	var seen, oneofs uint64
	for {
		name, ok := d.name()
		if !ok || !d.consume(':') {
			return false
		}
		f := p.byName(name)
		if f == nil || seen&(1<<f.fd.Index()) != 0 {
			return false // unknown or repeated
		}
		seen |= 1 << f.fd.Index()
		if d.next() == 'n' && !f.takesNull {
			if !d.literal("null") {
				return false
			}
		} else if !d.field(f, &oneofs, depth) {
			return false
		}
		if !d.consume(',') {
			return d.consume('}')
		}
	}
}

// byName returns p's field named name: by its JSON name, or else by its
// proto name, protojson's order.
func (p *plan) byName(name []byte) *field {
	for i := range p.fields {
		if string(name) == p.fields[i].jsonName {
			return &p.fields[i]
		}
	}
	for i := range p.fields {
		if string(name) == p.fields[i].protoName {
			return &p.fields[i]
		}
	}
	return nil
}

func (d *decoder) field(f *field, oneofs *uint64, depth int) bool {
	switch {
	case f.fd.IsList():
		return d.list(f, depth)
	case f.fd.IsMap():
		return d.mapEntries(f, depth)
	}
	if od := f.fd.ContainingOneof(); od != nil {
		if od.Index() >= 64 || *oneofs&(1<<od.Index()) != 0 {
			return false
		}
		*oneofs |= 1 << od.Index()
	}
	return d.singular(f, depth)
}

// list writes each element of an array as an occurrence of f.
func (d *decoder) list(f *field, depth int) bool {
	if depth > maxDepth || !d.consume('[') {
		return false
	}
	if d.consume(']') {
		return true
	}
	for {
		if !d.singular(f, depth) {
			return false
		}
		if !d.consume(',') {
			return d.consume(']')
		}
	}
}

// mapEntries writes an object as entries of f, a map with string keys.
// Keys with escapes are left to protojson: the others are compared where
// they are in data.
func (d *decoder) mapEntries(f *field, depth int) bool {
	if depth > maxDepth || f.fd.MapKey().Kind() != protoreflect.StringKind || !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	var first [16][]byte
	keys := first[:0]
	for {
		key, ok := d.name()
		if !ok || len(keys) == maxKeys || !utf8.Valid(key) || !d.consume(':') {
			return false
		}
		for _, k := range keys {
			if string(k) == string(key) {
				return false // a repeated key
			}
		}
		keys = append(keys, key)
		d.tag(f.fd, protowire.BytesType)
		entry := d.openLength()
		d.tag(f.fd.MapKey(), protowire.BytesType)
		d.out = protowire.AppendBytes(d.out, key)
		if !d.singular(f.mapValue, depth) {
			return false
		}
		d.closeLength(entry)
		if !d.consume(',') {
			return d.consume('}')
		}
	}
}

// singular writes one value of f's type.
func (d *decoder) singular(f *field, depth int) bool {
	fd := f.fd
	switch fd.Kind() {
	case protoreflect.MessageKind:
		d.tag(fd, protowire.BytesType)
		start := d.openLength()
		if !d.message(f.messagePlan(), depth+1) {
			return false
		}
		d.closeLength(start)
		return true
	case protoreflect.BoolKind:
		d.tag(fd, protowire.VarintType)
		if d.literal("true") {
			d.out = append(d.out, 1)
			return true
		}
		d.out = append(d.out, 0)
		return d.literal("false")
	case protoreflect.StringKind:
		d.tag(fd, protowire.BytesType)
		return d.str()
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind,
		protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		bits := 32
		if fd.Kind() == protoreflect.Int64Kind || fd.Kind() == protoreflect.Sint64Kind || fd.Kind() == protoreflect.Sfixed64Kind {
			bits = 64
		}
		n, err := strconv.ParseInt(d.integer(bits == 64), 10, bits)
		d.signed(fd, n)
		return err == nil
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		bits := 32
		if fd.Kind() == protoreflect.Uint64Kind || fd.Kind() == protoreflect.Fixed64Kind {
			bits = 64
		}
		n, err := strconv.ParseUint(d.integer(bits == 64), 10, bits)
		d.unsigned(fd, n)
		return err == nil
	case protoreflect.FloatKind:
		n, ok := d.number(32)
		d.tag(fd, protowire.Fixed32Type)
		d.out = protowire.AppendFixed32(d.out, math.Float32bits(float32(n)))
		return ok
	case protoreflect.DoubleKind:
		n, ok := d.number(64)
		d.tag(fd, protowire.Fixed64Type)
		d.out = protowire.AppendFixed64(d.out, math.Float64bits(n))
		return ok
	case protoreflect.EnumKind:
		if fd.Enum().FullName() == nullValue {
			return false
		}
		name, ok := d.name()
		if !ok {
			return false
		}
		if ev := f.enumValue(name); ev != nil {
			d.tag(fd, protowire.VarintType)
			d.out = protowire.AppendVarint(d.out, uint64(int64(ev.Number())))
			return true
		}
	}
	return false // bytes, groups, unknown enum names
}

// enumValue is the value of f's enum named name, or nil.
func (f *field) enumValue(name []byte) protoreflect.EnumValueDescriptor {
	values := f.fd.Enum().Values()
	for i := range values.Len() {
		if ev := values.Get(i); string(ev.Name()) == string(name) {
			return ev
		}
	}
	return nil
}

func (d *decoder) signed(fd protoreflect.FieldDescriptor, n int64) {
	switch fd.Kind() {
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		d.tag(fd, protowire.VarintType)
		d.out = protowire.AppendVarint(d.out, protowire.EncodeZigZag(n))
	case protoreflect.Sfixed32Kind:
		d.tag(fd, protowire.Fixed32Type)
		d.out = protowire.AppendFixed32(d.out, uint32(n))
	case protoreflect.Sfixed64Kind:
		d.tag(fd, protowire.Fixed64Type)
		d.out = protowire.AppendFixed64(d.out, uint64(n))
	default:
		d.tag(fd, protowire.VarintType)
		d.out = protowire.AppendVarint(d.out, uint64(n))
	}
}

func (d *decoder) unsigned(fd protoreflect.FieldDescriptor, n uint64) {
	switch fd.Kind() {
	case protoreflect.Fixed32Kind:
		d.tag(fd, protowire.Fixed32Type)
		d.out = protowire.AppendFixed32(d.out, uint32(n))
	case protoreflect.Fixed64Kind:
		d.tag(fd, protowire.Fixed64Type)
		d.out = protowire.AppendFixed64(d.out, n)
	default:
		d.tag(fd, protowire.VarintType)
		d.out = protowire.AppendVarint(d.out, n)
	}
}

const nullValue protoreflect.FullName = "google.protobuf.NullValue"

// The fields of google.protobuf.Value, by their index in its descriptor.
const (
	nullValueField = iota
	numberValueField
	stringValueField
	boolValueField
	structValueField
	listValueField
)

// value writes a google.protobuf.Value: any JSON value, as the field of
// its kind.
func (d *decoder) value(p *plan, depth int) bool {
	switch d.next() {
	case 'n':
		d.tag(p.fields[nullValueField].fd, protowire.VarintType)
		d.out = append(d.out, 0)
		return d.literal("null")
	case 't', 'f':
		return d.singular(&p.fields[boolValueField], depth)
	case '"':
		return d.singular(&p.fields[stringValueField], depth)
	case '{':
		return d.singular(&p.fields[structValueField], depth)
	case '[':
		return d.singular(&p.fields[listValueField], depth)
	}
	return d.singular(&p.fields[numberValueField], depth)
}

// name is a string without escapes, as it is in data: a field name or an
// enum value's name, which are ASCII.
func (d *decoder) name() ([]byte, bool) {
	if !d.consume('"') {
		return nil, false
	}
	for i := d.pos; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			name := d.data[d.pos:i]
			d.pos = i + 1
			return name, true
		case c == '\\' || c < ' ':
			return nil, false
		}
	}
	return nil, false
}

// str writes a string, length first. Escapes of UTF-16 surrogates are
// left to protojson, and so are invalid UTF-8 and control characters,
// which it refuses.
func (d *decoder) str() bool {
	if !d.consume('"') {
		return false
	}
	value := d.openLength()
	from := d.pos
	for i := d.pos; i < len(d.data); i++ {
		c := d.data[i]
		switch {
		case c == '"':
			d.out = append(d.out, d.data[from:i]...)
			d.pos = i + 1
			valid := utf8.Valid(d.out[value:])
			d.closeLength(value)
			return valid
		case c < ' ':
			return false
		case c != '\\':
			continue
		}
		d.out = append(d.out, d.data[from:i]...)
		if i+1 == len(d.data) {
			return false
		}
		i++
		switch e := d.data[i]; e {
		case '"', '\\', '/':
			d.out = append(d.out, e)
		case 'b':
			d.out = append(d.out, '\b')
		case 'f':
			d.out = append(d.out, '\f')
		case 'n':
			d.out = append(d.out, '\n')
		case 'r':
			d.out = append(d.out, '\r')
		case 't':
			d.out = append(d.out, '\t')
		case 'u':
			if i+4 >= len(d.data) {
				return false
			}
			r, ok := hex4(d.data[i+1 : i+5])
			if !ok || r >= 0xd800 && r < 0xe000 {
				return false
			}
			d.out = utf8.AppendRune(d.out, r)
			i += 4
		default:
			return false
		}
		from = i + 1
	}
	return false
}

// hex4 reads four hexadecimal digits.
func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// integer is the next integer: digits with an optional minus sign and no
// leading zero, in quotes when quoted allows them (64-bit integers are
// written as strings). It is "" when something else comes next.
func (d *decoder) integer(quoted bool) string {
	d.skipSpace()
	inQuotes := quoted && d.pos < len(d.data) && d.data[d.pos] == '"'
	if inQuotes {
		d.pos++ // no space inside the quotes: protojson refuses it
	}
	start := d.pos
	if d.pos < len(d.data) && d.data[d.pos] == '-' {
		d.pos++
	}
	digits := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	if d.pos == digits || d.data[digits] == '0' && d.pos-digits > 1 {
		return ""
	}
	n := string(d.data[start:d.pos])
	if inQuotes {
		if d.pos == len(d.data) || d.data[d.pos] != '"' {
			return ""
		}
		d.pos++
		return n
	}
	if d.pos < len(d.data) {
		if c := d.data[d.pos]; c == '.' || c == 'e' || c == 'E' {
			return "" // integral fractions and exponents are protojson's
		}
	}
	return n
}

// number decodes a JSON number (not a string) as a float of bits bits;
// a value out of its range is protojson's to refuse.
func (d *decoder) number(bits int) (float64, bool) {
	d.skipSpace()
	start := d.pos
	if d.pos < len(d.data) && d.data[d.pos] == '-' {
		d.pos++
	}
	digits := d.skipDigits()
	if digits == 0 || digits > 1 && d.data[d.pos-digits] == '0' {
		return 0, false
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if d.skipDigits() == 0 {
			return 0, false
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if d.skipDigits() == 0 {
			return 0, false
		}
	}
	n, err := strconv.ParseFloat(string(d.data[start:d.pos]), bits)
	return n, err == nil
}

func (d *decoder) skipDigits() int {
	start := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	return d.pos - start
}
