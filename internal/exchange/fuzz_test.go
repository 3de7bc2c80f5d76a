package exchange_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/assessd/assessd/internal/exchange"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/testkit/ziptest"
)

// fuzzLimits keep each fuzz run cheap.
var fuzzLimits = exchange.Limits{MaxBody: 1 << 20, MaxEntries: 50, MaxEntryBytes: 256 << 10, MaxTotalBytes: 1 << 20}

// FuzzImport feeds arbitrary bodies to the package and document readers:
// they must never panic and every refusal must be a client error.
func FuzzImport(f *testing.F) {
	f.Add(exportQTI(f, sampleDocument()))
	f.Add(ziptest.Dir(f, "testdata/foreign-qti3"))
	f.Add(ziptest.Dir(f, "testdata/qti21"))
	f.Add([]byte(`{"schema":"assessd.exam/v1","exam":{"name":"x","language":"en"},"questions":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := exchange.Import(bytes.NewReader(body), fuzzLimits)
		var e *errs.Error
		if err != nil && (!errors.As(err, &e) || e.Kind != errs.KindInvalid) {
			t.Fatalf("import error is not a client error: %v", err)
		}
	})
}

// FuzzItemXML wraps arbitrary XML as the single item of a package, to
// reach the XML parser and the item mapping directly.
func FuzzItemXML(f *testing.F) {
	f.Add([]byte(`<qti-assessment-item identifier="a"><qti-response-declaration identifier="R" cardinality="single" base-type="float"><qti-correct-response><qti-value>1</qti-value></qti-correct-response></qti-response-declaration><qti-item-body><qti-text-entry-interaction response-identifier="R"/></qti-item-body></qti-assessment-item>`))
	f.Add([]byte(`<assessmentItem xmlns="http://www.imsglobal.org/xsd/imsqti_v2p1"><itemBody><choiceInteraction responseIdentifier="R"/></itemBody></assessmentItem>`))
	f.Add([]byte(`<!DOCTYPE x><x/>`))
	f.Fuzz(func(t *testing.T, item []byte) {
		pkg := ziptest.Of(t, map[string][]byte{"imsmanifest.xml": manifestWith("i.xml"), "i.xml": item})
		p, err := exchange.Import(bytes.NewReader(pkg), fuzzLimits)
		var e *errs.Error
		if err != nil && (!errors.As(err, &e) || e.Kind != errs.KindInvalid) {
			t.Fatalf("import error is not a client error: %v", err)
		}
		if err == nil && len(p.Questions)+len(p.Warnings) != 1 {
			t.Fatalf("the item neither imported nor warned: %+v", p)
		}
	})
}
