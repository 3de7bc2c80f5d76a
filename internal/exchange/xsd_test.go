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
// package with xmllint (Debian libxml2-utils) against the IMS QTI 3.0.1
// XSDs in testdata/qti3-xsd: items and the test against
// imsqti_asiv3p0p1_v1p0.xsd, the manifest against
// imsqtiv3p0_imscpv1p2_v1p0.xsd, both with their imports, offline.
func TestQTIValidatesAgainstIMSXSDs(t *testing.T) {
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Fatal("xmllint is required (apt-get install libxml2-utils)")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "qti3-xsd"))
	if err != nil {
		t.Fatal(err)
	}
	pkg := exportQTI(t, sampleDocument())
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	// Compiling the item schema takes seconds, so each schema validates
	// all of its files in one run.
	bySchema := map[string][]string{}
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
		bySchema[schema] = append(bySchema[schema], path)
	}
	if len(bySchema["imsqti_asiv3p0p1_v1p0.xsd"]) < 2 || len(bySchema["imsqtiv3p0_imscpv1p2_v1p0.xsd"]) != 1 {
		t.Fatalf("the package lacks its manifest, test or items: %v", bySchema)
	}
	for schema, paths := range bySchema {
		args := append([]string{"--noout", "--nonet", "--schema", filepath.Join(dir, schema)}, paths...)
		if msg, err := exec.Command("xmllint", args...).CombinedOutput(); err != nil {
			t.Errorf("not valid against %s: %s", schema, msg)
		}
	}
}
