package exchange

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"unicode"
)

// node is an element of a parsed XML document, or a text node (name "").
// Names are local names in QTI 3 spelling: a QTI 2.1 document is read
// through qti3Name, so one reader serves both versions.
type node struct {
	name  string
	space string
	attrs map[string]string
	kids  []*node
	text  string
}

// XML bounds beyond the byte limits: nesting and element count stop
// pathological trees that are small in bytes.
const (
	maxXMLDepth    = 64
	maxXMLElements = 200_000
)

// parseXML reads a document into a tree. Any DTD or entity declaration is
// refused outright: Go's decoder does not expand entities, but a document
// that declares them is hostile or broken, never needed by QTI.
func parseXML(name string, b []byte) (*node, error) {
	if declaresDTD(b) {
		return nil, importError(ReasonForbiddenXML, "%s declares a DTD or entities, which are not accepted", truncate(name, 200))
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var root *node
	var stack []*node
	elements := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, malformed("%s is not well-formed XML", truncate(name, 200)).WithCause(err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			return nil, importError(ReasonForbiddenXML, "%s declares a DTD or entities, which are not accepted", truncate(name, 200))
		case xml.StartElement:
			elements++
			if elements > maxXMLElements || len(stack) >= maxXMLDepth {
				return nil, tooLarge("%s is nested too deeply or has too many elements", truncate(name, 200))
			}
			n := &node{name: qti3Name(t.Name), space: t.Name.Space, attrs: make(map[string]string, len(t.Attr))}
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
					continue
				}
				key := kebab(a.Name.Local)
				if a.Name.Space == "http://www.w3.org/XML/1998/namespace" {
					key = "xml:" + a.Name.Local
				}
				n.attrs[key] = a.Value
			}
			if len(stack) == 0 {
				if root != nil {
					return nil, malformed("%s has more than one root element", truncate(name, 200))
				}
				root = n
			} else {
				parent := stack[len(stack)-1]
				parent.kids = append(parent.kids, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				parent := stack[len(stack)-1]
				parent.kids = append(parent.kids, &node{text: string(t)})
			}
		}
	}
	if root == nil {
		return nil, malformed("%s has no root element", truncate(name, 200))
	}
	return root, nil
}

// declaresDTD finds "<!DOCTYPE" or "<!ENTITY" in any letter case, before
// the decoder sees the document.
func declaresDTD(b []byte) bool {
	for {
		i := bytes.Index(b, []byte("<!"))
		if i < 0 {
			return false
		}
		b = b[i+2:]
		if hasFoldPrefix(b, "DOCTYPE") || hasFoldPrefix(b, "ENTITY") {
			return true
		}
	}
}

func hasFoldPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

// qti21Words are the one-word QTI 2.1 element names; every other lowercase
// name in a 2.1 document is XHTML content and keeps its name.
var qti21Words = map[string]bool{"value": true, "mapping": true, "prompt": true, "correct": true,
	"variable": true, "match": true, "member": true, "equal": true, "or": true, "and": true, "not": true,
	"sum": true, "gt": true, "gte": true, "lt": true, "lte": true, "null": true, "default": true}

// qti3Name spells an element's local name as QTI 3 does: QTI 2.1's
// camelCase QTI elements (choiceInteraction) become qti-choice-interaction;
// QTI 3 names and XHTML names are kept.
func qti3Name(n xml.Name) string {
	local := n.Local
	if n.Space != nsQTI21 || strings.HasPrefix(local, "qti-") {
		return local
	}
	if qti21Words[local] || strings.IndexFunc(local, unicode.IsUpper) > 0 {
		return "qti-" + kebab(local)
	}
	return local
}

// kebab turns camelCase into kebab-case (responseIdentifier →
// response-identifier); names without capitals are unchanged.
func kebab(s string) string {
	if strings.IndexFunc(s, unicode.IsUpper) < 0 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// child returns the first child element named name.
func (n *node) child(name string) *node {
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// children returns the child elements named name.
func (n *node) children(name string) []*node {
	var out []*node
	for _, k := range n.kids {
		if k.name == name {
			out = append(out, k)
		}
	}
	return out
}

// find returns the first element named name at any depth, depth first.
func (n *node) find(name string) *node {
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
		if f := k.find(name); f != nil {
			return f
		}
	}
	return nil
}

// findAll returns every element at any depth whose name satisfies keep.
func (n *node) findAll(keep func(*node) bool) []*node {
	var out []*node
	for _, k := range n.kids {
		if k.name == "" {
			continue
		}
		if keep(k) {
			out = append(out, k)
		}
		out = append(out, k.findAll(keep)...)
	}
	return out
}

// textContent concatenates the text of n and its descendants.
func (n *node) textContent() string {
	if n.name == "" {
		return n.text
	}
	var b strings.Builder
	for _, k := range n.kids {
		b.WriteString(k.textContent())
	}
	return b.String()
}

// hasClass reports whether the element's class attribute lists c.
func (n *node) hasClass(c string) bool {
	for _, f := range strings.Fields(n.attrs["class"]) {
		if f == c {
			return true
		}
	}
	return false
}
