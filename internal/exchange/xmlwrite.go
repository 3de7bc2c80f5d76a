package exchange

import (
	"bufio"
	"encoding/xml"
	"io"
)

// elem is an XML element being written: attributes in order, then either
// child elements or text. Building a small tree per item keeps each
// mapping function declarative; items are written one at a time, so the
// package never is in memory as a whole.
type elem struct {
	name  string
	attrs []string // name, value pairs
	kids  []*elem
	text  string
	raw   bool // text node: name is empty
}

// el returns an element with attributes given as name, value pairs.
func el(name string, attrs ...string) *elem { return &elem{name: name, attrs: attrs} }

// textNode returns character data to place among an element's children.
func textNode(s string) *elem { return &elem{text: s, raw: true} }

// add appends children and returns e.
func (e *elem) add(kids ...*elem) *elem {
	for _, k := range kids {
		if k != nil {
			e.kids = append(e.kids, k)
		}
	}
	return e
}

// withText sets e's text content and returns e.
func (e *elem) withText(s string) *elem {
	e.kids = append(e.kids, textNode(s))
	return e
}

// writeXML writes the XML declaration and the tree, indenting elements
// that hold only elements (mixed content is written as is).
func writeXML(w io.Writer, root *elem) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(xml.Header)
	writeElem(bw, root, 0)
	bw.WriteByte('\n')
	return bw.Flush()
}

// writeElem writes e at depth. A write error sticks in w and is returned
// by writeXML's Flush.
func writeElem(w *bufio.Writer, e *elem, depth int) {
	if e.raw {
		_ = xml.EscapeText(w, []byte(e.text))
		return
	}
	w.WriteByte('<')
	w.WriteString(e.name)
	for i := 0; i+1 < len(e.attrs); i += 2 {
		w.WriteByte(' ')
		w.WriteString(e.attrs[i])
		w.WriteString(`="`)
		_ = xml.EscapeText(w, []byte(e.attrs[i+1]))
		w.WriteByte('"')
	}
	if len(e.kids) == 0 {
		w.WriteString("/>")
		return
	}
	w.WriteByte('>')
	block := true
	for _, k := range e.kids {
		if k.raw {
			block = false
		}
	}
	for _, k := range e.kids {
		if block {
			w.WriteByte('\n')
			for range depth + 1 {
				w.WriteString("  ")
			}
		}
		writeElem(w, k, depth+1)
	}
	if block {
		w.WriteByte('\n')
		for range depth {
			w.WriteString("  ")
		}
	}
	w.WriteString("</")
	w.WriteString(e.name)
	w.WriteByte('>')
}
