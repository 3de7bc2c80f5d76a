// Command k8sschema writes strict, standalone JSON schemas for kubeconform
// from a Kubernetes OpenAPI v2 document (api/openapi-spec/swagger.json of
// k8s.io/kubernetes), so manifests are validated without the internet.
// Each kind gets <kind>-<group>-<version>.json (core kinds: <kind>-v1-v1),
// matching kubeconform's location template
// {{ .ResourceKind }}-{{ .Group }}-{{ .ResourceAPIVersion }}.json.
//
// Usage: k8sschema swagger.json outdir
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: k8sschema swagger.json outdir")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "k8sschema:", err)
		os.Exit(1)
	}
}

func run(swaggerPath, out string) error {
	raw, err := os.ReadFile(swaggerPath)
	if err != nil {
		return err
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	defs := map[string]any{}
	for name, d := range doc.Definitions {
		defs[name] = strict(d)
	}
	// Quantities and int-or-string values are numbers or strings in YAML.
	numberOrString := map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
	defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = numberOrString
	defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] = numberOrString
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for name, d := range doc.Definitions {
		gvks, _ := d["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk := g.(map[string]any)
			group, version, kind := gvk["group"].(string), gvk["version"].(string), gvk["kind"].(string)
			if group == "" {
				group = version
			}
			group = strings.Split(group, ".")[0]
			schema := map[string]any{"$ref": "#/definitions/" + name, "definitions": reachable(defs, name)}
			b, err := json.Marshal(schema)
			if err != nil {
				return err
			}
			file := fmt.Sprintf("%s-%s-%s.json", strings.ToLower(kind), group, version)
			if err := os.WriteFile(filepath.Join(out, file), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// strict forbids properties a definition does not declare and rewrites
// references to stay inside the standalone file.
func strict(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			if strings.HasPrefix(k, "x-kubernetes-") {
				continue
			}
			out[k] = strict(x)
		}
		if _, ok := out["properties"]; ok {
			if _, set := out["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = strict(x)
		}
		return out
	}
	return v
}

// reachable returns the definitions that name refers to, transitively.
func reachable(defs map[string]any, name string) map[string]any {
	out := map[string]any{}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if ref, ok := t["$ref"].(string); ok {
				n := strings.TrimPrefix(ref, "#/definitions/")
				if _, seen := out[n]; !seen {
					out[n] = defs[n]
					walk(defs[n])
				}
			}
			for _, x := range t {
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	out[name] = defs[name]
	walk(defs[name])
	return out
}
