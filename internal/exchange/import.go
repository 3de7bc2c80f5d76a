package exchange

import (
	"bytes"
	"io"
)

// Import reads a native document (JSON) or a QTI 3.0 or 2.1 content
// package (zip) from r, within l, into a Plan. The format is recognised by
// content, not by the declared media type. Errors are *errs.Error values
// with one of the Reason constants.
func Import(r io.Reader, l Limits) (Plan, error) {
	p, err := read(r, l)
	if err == nil {
		err = p.checkText()
	}
	if err != nil {
		return Plan{}, err
	}
	return p, nil
}

// read reads the document or package into a Plan.
func read(r io.Reader, l Limits) (Plan, error) {
	body, err := readBody(r, l)
	if err != nil {
		return Plan{}, err
	}
	switch {
	case bytes.HasPrefix(body, []byte("PK\x03\x04")) || bytes.HasPrefix(body, []byte("PK\x05\x06")):
		a, err := openArchive(body, l)
		if err != nil {
			return Plan{}, err
		}
		return readPackage(a)
	case bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n\ufeff"), []byte("{")):
		doc, err := decodeNative(body)
		if err != nil {
			return Plan{}, err
		}
		return doc.Plan(), nil
	}
	return Plan{}, importError(ReasonNotPackage, "must be a QTI content package (zip) or a native %s document (JSON)", NativeSchema)
}
