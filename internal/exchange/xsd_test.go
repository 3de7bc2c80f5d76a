package exchange_test

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestQTIValidatesAgainstIMSXSDs validates every XML file of an exported
// package with xmllint (Debian libxml2-utils) against the official IMS QTI
// 3.0 XSDs: items and the test against imsqti_asiv3p0p1_v1p0.xsd, the
// manifest against imsqtiv3p0_imscpv1p2_v1p0.xsd, both with their imports,
// in QTI_XSD_DIR. No package registry this project can reach ships those
// files, so the test runs only where they are provided.
func TestQTIValidatesAgainstIMSXSDs(t *testing.T) {
	dir := os.Getenv("QTI_XSD_DIR")
	if dir == "" {
		t.Skip("set QTI_XSD_DIR to a folder with the IMS QTI 3.0 XSDs to validate the export")
	}
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Fatal("xmllint is required (apt-get install libxml2-utils)")
	}
	pkg := exportQTI(t, sampleDocument())
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".xml") {
			continue
		}
		r, _ := f.Open()
		b, _ := io.ReadAll(r)
		r.Close()
		path := filepath.Join(out, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		schema := "imsqti_asiv3p0p1_v1p0.xsd"
		if f.Name == "imsmanifest.xml" {
			schema = "imsqtiv3p0_imscpv1p2_v1p0.xsd"
		}
		cmd := exec.Command("xmllint", "--noout", "--nonet", "--schema", filepath.Join(dir, schema), path)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s is not valid against %s: %s", f.Name, schema, msg)
		}
	}
}
