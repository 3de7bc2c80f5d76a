package expr_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/assessment/expr"
)

func TestCompileRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"no equals sign", "answer.value", `starting with "="`},
		{"empty", "=", "needs an expression"},
		{"syntax", "=answer.value = (", "is not valid JSONata"},
		{"range", "=[1..100000000]", "range operator"},
		{"pad", `=$pad("", 1000000000)`, "$pad"},
		{"reduce", `=$reduce([1,2], function($a, $b){$a & $a})`, "$reduce"},
		{"named function (recursion)", `=($f := function($x){ $f($x) }; $f(1))`, "callback"},
		{"self-application", `=(function($g){ $g($g) })(function($g){ $g($g) })`, "callback"},
		{"lambda as data", `=$map([function($g){ $g($g) }], function($v){ $v($v) })`, "callback"},
		{"rebinding a callback function", `=($map := $filter; 1)`, "rebind"},
		{"too deep", "=" + strings.Repeat("(", 40) + "1" + strings.Repeat(")", 40), "nested too deeply"},
		{"too long", "=" + strings.Repeat("1+", 1100) + "1", "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := expr.Compile(tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile(%q) = %v, want an error containing %q", tc.src, err, tc.want)
			}
		})
	}
}

func TestEval(t *testing.T) {
	data := map[string]any{
		"answer": map[string]any{"value": []any{"b", "a"}, "files": []any{"https://cdn.example/a.pdf"}},
		"config": map[string]any{"options": []any{
			map[string]any{"id": "a", "correct": true},
			map[string]any{"id": "b", "correct": true},
			map[string]any{"id": "c", "correct": false},
		}},
	}
	for _, tc := range []struct {
		src  string
		want any
	}{
		{`=$join($sort(answer.value), ",") = $join($sort(config.options[correct].id), ",")`, true},
		{`=$count($filter(config.options, function($o){ $o.correct }))`, 2.0},
		{`=answer.files`, []any{"https://cdn.example/a.pdf"}},
	} {
		e, err := expr.Compile(tc.src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.src, err)
		}
		got, err := e.Eval(context.Background(), data)
		if err != nil {
			t.Fatalf("Eval(%q): %v", tc.src, err)
		}
		if s, ok := got.([]any); ok {
			if len(s) != 1 || s[0] != "https://cdn.example/a.pdf" {
				t.Fatalf("Eval(%q) = %v", tc.src, got)
			}
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Fatalf("Eval(%q) = %v, want %v", tc.src, got, tc.want)
		}
	}
}

func TestEvalBounds(t *testing.T) {
	e, err := expr.Compile("=answer.value")
	if err != nil {
		t.Fatal(err)
	}
	var deep any = "x"
	for range expr.MaxDataDepth + 2 {
		deep = []any{deep}
	}
	if _, err := e.Eval(context.Background(), map[string]any{"answer": map[string]any{"value": deep}}); err == nil {
		t.Fatal("evaluated data nested beyond MaxDataDepth")
	}
	if _, err := e.Eval(context.Background(), map[string]any{}); !errors.Is(err, expr.ErrUndefined) {
		t.Fatalf("missing value: %v, want ErrUndefined", err)
	}

	// A quadratic expression over a large answer: the caller gets
	// ErrTimeout at the deadline instead of waiting for it.
	slow, err := expr.Compile(`=$count($map(answer.value, function($a){ $count(answer.value[$ = $a]) }))`)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]any, 20000)
	for i := range big {
		big[i] = float64(i)
	}
	_, err = slow.Eval(context.Background(), map[string]any{"answer": map[string]any{"value": big}})
	if !errors.Is(err, expr.ErrTimeout) {
		t.Fatalf("slow expression: %v, want ErrTimeout", err)
	}
}
