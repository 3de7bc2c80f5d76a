// Package ziptest builds zip archives for tests: content packages to
// import, hostile ones included.
package ziptest

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Of packs files, by entry name (written as given, "../x" included), as a
// zip archive.
func Of(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, b := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Dir packs the files below dir, named relative to it.
func Dir(t testing.TB, dir string) []byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return Of(t, files)
}
