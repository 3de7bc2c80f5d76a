// Package archtest holds the tests of the code's shape: which package may
// import which (decision 0197).
package archtest

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/assessd/assessd/"

// layers are the packages from the top down; a package imports packages of
// its own layer or of the layers below it, never above. A pattern ending in
// "/..." is the package and everything under it. Every package belongs to
// exactly one layer, so a new package is placed here when it is added.
var layers = []struct {
	name     string
	packages []string
}{
	{"cmd", []string{"cmd/...", "deploy/..."}},
	// The test helpers and this test are above everything they help test;
	// production code never imports them.
	{"app", []string{"internal/app", "internal/app/sweeps", "internal/testkit/...", "internal/archtest"}},
	// What answers the outside world: the API's handlers, the pages and the
	// Temporal activities, each calling into the domain.
	{"api and pages", []string{"api", "internal/identity/...", "internal/embedflow", "internal/ltiflow", "internal/lti/pages",
		"internal/webhooks/pages", "activities/..."}},
	{"middleware", []string{"internal/server", "internal/idempotency"}},
	{"domain", []string{"internal/assessment/...", "internal/answersheet", "internal/classes", "internal/delivery",
		"internal/exchange", "internal/generation", "internal/lti", "internal/media", "internal/regeneration", "internal/scanning",
		"internal/transfer", "internal/webhooks", "internal/webhooks/event"}},
	// What every feature builds on: organizations, users, callers and
	// permissions, and the audit log. It imports no feature package.
	{"tenancy", []string{"tenancy", "internal/audit"}},
	// Workflow definitions: deterministic code on the outbox's routes.
	{"workflows", []string{"workflows/..."}},
	{"platform", []string{"internal/platform/...", "internal/store", "internal/outbox", "internal/ai", "internal/web",
		"internal/pbjson", "internal/devenv", "observability/...", "api/gen/...", "api/openapi"}},
}

// apiImporters are the only packages that import the handler package api,
// which imports every domain.
var apiImporters = []string{"api", "internal/app", "cmd/..."}

// protoFree are the layers that never import the generated protobuf types:
// the domain speaks its own types, and api converts.
var protoFree = []string{"middleware", "domain", "tenancy", "workflows"}

// pkg is one package of the module with the imports of its code and of its
// own tests (package x). External tests (package x_test) are programs of
// their own, end-to-end tests that may wire anything, and are not checked.
type pkg struct {
	path        string
	imports     []string
	testImports []string
}

// TestImportsPointDown: cmd -> internal/app -> api and pages -> middleware
// -> domain -> tenancy -> workflows -> platform; only api, internal/app and
// cmd import api; no domain package imports generated protobuf types.
func TestImportsPointDown(t *testing.T) {
	pkgs := listPackages(t)
	layerOf := map[string]int{}
	for _, p := range pkgs {
		var in []string
		for i, l := range layers {
			if matchesAny(l.packages, p.path) {
				in = append(in, l.name)
				layerOf[p.path] = i
			}
		}
		switch len(in) {
		case 0:
			t.Errorf("%s is in no layer: add it to layers in internal/archtest", p.path)
		case 1:
		default:
			t.Errorf("%s is in the layers %v: patterns overlap", p.path, in)
		}
	}
	for _, l := range layers {
		for _, pattern := range l.packages {
			if !slices.ContainsFunc(pkgs, func(p pkg) bool { return matches(pattern, p.path) }) {
				t.Errorf("layer %s names %s, which matches no package", l.name, pattern)
			}
		}
	}
	if t.Failed() {
		return
	}
	order := make([]string, len(layers))
	for i, l := range layers {
		order[i] = l.name
	}
	for _, p := range pkgs {
		from := layerOf[p.path]
		check := func(imp, via string) {
			to, ok := layerOf[imp]
			if !ok {
				return // a package of the module outside ./..., such as tools
			}
			if to < from {
				t.Errorf("%s%s imports %s: layer %q imports layer %q, above it (imports point down: %s)",
					p.path, via, imp, layers[from].name, layers[to].name, strings.Join(order, " -> "))
			}
			if imp == "api" && !matchesAny(apiImporters, p.path) {
				t.Errorf("%s%s imports api: only %v do; the error envelope is internal/platform/apihttp", p.path, via, apiImporters)
			}
			if matches("api/gen/...", imp) && slices.Contains(protoFree, layers[from].name) {
				t.Errorf("%s%s imports the generated %s: layer %q speaks domain types, api converts", p.path, via, imp, layers[from].name)
			}
		}
		for _, imp := range p.imports {
			check(imp, "")
		}
		for _, imp := range p.testImports {
			if !matches("internal/testkit/...", imp) { // any test may use the test helpers
				check(imp, " (its tests)")
			}
		}
	}
}

// listPackages lists the module's packages with their imports of the
// module, paths relative to it.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .TestImports \" \"}}", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	ours := func(list string) []string {
		var paths []string
		for _, imp := range strings.Fields(list) {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				paths = append(paths, rel)
			}
		}
		return paths
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			t.Fatalf("go list printed %q", sc.Text())
		}
		pkgs = append(pkgs, pkg{path: strings.TrimPrefix(f[0], module), imports: ours(f[1]), testImports: ours(f[2])})
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list found no package under %s", module)
	}
	return pkgs
}

func matchesAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(pattern string) bool { return matches(pattern, path) })
}

// matches reports whether path is pattern's package, or under it when
// pattern ends in "/...".
func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}
