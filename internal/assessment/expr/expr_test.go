package expr_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
		// 2^30 characters from 400 terms: each would take the process's
		// memory, and an evaluation cannot be stopped.
		{"a string doubled", `=($a := "x";` + strings.Repeat(" $a := $a & $a;", 30) + ` $length($a))`, "repeats its variables"},
		{"a string doubled under new names", `=($a0 := "x";` + doublings(30) + ` $length($a30))`, "repeats its variables"},
		{"an array doubled", `=($a := ["x"];` + strings.Repeat(" $a := [$a, $a];", 30) + ` $string($a))`, "repeats its variables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := expr.Compile(tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile(%q) = %v, want an error containing %q", tc.src, err, tc.want)
			}
		})
	}
}

// doublings assigns $a1 to $an, each twice the one before.
func doublings(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, " $a%d := $a%d & $a%d;", i, i-1, i-1)
	}
	return b.String()
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
		// Variables named many times, and a doubling's first steps, are
		// within the bound; a function's parameter stands for one value.
		{`=($v := $lowercase(answer.value[1]); $v = "b" or $v = "c" or $v = "a")`, true},
		{`=($a0 := "x";` + doublings(5) + ` $length($a5))`, 32.0},
		{`=$count($filter(config.options, function($o){ $o.correct and $o.id = $o.id and $o.id != "z" }))`, 2.0},
	} {
		e, err := expr.Compile(tc.src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.src, err)
		}
		got, err := e.Eval(context.Background(), "org_eval", data)
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

// The library keeps a call's input in process-wide function values and
// rewrites the syntax tree of ~>: two organizations' evaluations at once
// must not see each other's data, and an expression must give the same
// answer every time.
func TestEvaluationsAreIsolated(t *testing.T) {
	upper, err := expr.Compile("=answer.value.$uppercase()")
	if err != nil {
		t.Fatal(err)
	}
	// An evaluation the machine starves past expr.Timeout (CI runs tests
	// in parallel under the race detector) tells nothing: it is counted
	// apart, and most must finish.
	var wrong, late atomic.Int64
	var wg sync.WaitGroup
	for _, v := range []string{"alice", "bob"} {
		wg.Go(func() {
			for range 10000 {
				got, err := upper.Eval(context.Background(), "org_"+v, map[string]any{"answer": map[string]any{"value": v}})
				switch {
				case errors.Is(err, expr.ErrTimeout):
					late.Add(1)
				case err != nil || got != strings.ToUpper(v):
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := wrong.Load(); n > 0 {
		t.Fatalf("%d of 20000 evaluations saw another's data", n)
	}
	if n := late.Load(); n > 2000 {
		t.Fatalf("%d of 20000 evaluations timed out", n)
	}

	apply, err := expr.Compile("=answer.value ~> $substring(0, 2)")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		got, err := apply.Eval(context.Background(), "org_apply", map[string]any{"answer": map[string]any{"value": "hello"}})
		if err != nil || got != "he" {
			t.Fatalf("evaluation %d: %v, %v; want he", i, got, err)
		}
	}
}

func TestEvalAll(t *testing.T) {
	compile := func(src string) *expr.Expr {
		e, err := expr.Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	value := compile("=answer.value")
	slow := compile(slowRule)
	data := func(v any) map[string]any { return map[string]any{"answer": map[string]any{"value": v}} }
	var deep any = "x"
	for range expr.MaxDataDepth + 2 {
		deep = []any{deep}
	}
	big := slowInput()

	// Each task has its own outcome, in order: one task's error is not
	// another's.
	out := expr.EvalAll(context.Background(), "org_batch", []expr.Task{
		{Expr: value, Data: data(1.0)},
		{Expr: value, Data: data(deep)},
		{Expr: value, Data: map[string]any{}},
		{Expr: value, Data: data("last")},
	})
	if len(out) != 4 || out[0].Value != 1.0 || out[0].Err != nil || out[3].Value != "last" || out[3].Err != nil {
		t.Fatalf("outcomes %+v", out)
	}
	if out[1].Err == nil || errors.Is(out[2].Err, expr.ErrUndefined) == false {
		t.Fatalf("deep data: %v, missing value: %v", out[1].Err, out[2].Err)
	}

	// A cancelled caller does not wait at all.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out := expr.EvalAll(ctx, "org_batch", []expr.Task{{Expr: slow, Data: data(big)}}); !errors.Is(out[0].Err, expr.ErrTimeout) {
		t.Fatalf("cancelled: %+v", out)
	}
	if out := expr.EvalAll(context.Background(), "org_batch", nil); len(out) != 0 {
		t.Fatalf("no tasks: %+v", out)
	}

	// The caller stops waiting at the slow task: what came before it
	// stands, it and what follows it time out.
	out = expr.EvalAll(context.Background(), slowTenant, []expr.Task{
		{Expr: value, Data: data(true)},
		{Expr: slow, Data: data(big)},
		{Expr: value, Data: data(true)},
	})
	if out[0].Value != true || !errors.Is(out[1].Err, expr.ErrTimeout) || !errors.Is(out[2].Err, expr.ErrTimeout) {
		t.Fatalf("outcomes %+v", out)
	}
	expr.WaitIdle()
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
	if _, err := e.Eval(context.Background(), "org_bounds", map[string]any{"answer": map[string]any{"value": deep}}); err == nil {
		t.Fatal("evaluated data nested beyond MaxDataDepth")
	}
	if _, err := e.Eval(context.Background(), "org_bounds", map[string]any{}); !errors.Is(err, expr.ErrUndefined) {
		t.Fatalf("missing value: %v, want ErrUndefined", err)
	}

	// A quadratic expression over a large answer: the caller gets
	// ErrTimeout at the deadline instead of waiting for it.
	slow, err := expr.Compile(slowRule)
	if err != nil {
		t.Fatal(err)
	}
	_, err = slow.Eval(context.Background(), slowTenant, map[string]any{"answer": map[string]any{"value": slowInput()}})
	if !errors.Is(err, expr.ErrTimeout) {
		t.Fatalf("slow expression: %v, want ErrTimeout", err)
	}
	expr.WaitIdle()
}

// slowRule is quadratic in its answer: on slowInput it runs for about half
// a second on a laptop, several seconds under the race detector, and
// keeps running after its caller gave up (the library cannot be stopped),
// holding one of its organization's slots and one of the process's. The
// tests that start one wait for it to end (expr.WaitIdle), so the next
// finds its slots free.
const slowRule = `=$count($map(answer.value, function($a){ $count(answer.value[$ = $a]) }))`

func slowInput() []any {
	big := make([]any, 2000)
	for i := range big {
		big[i] = float64(i)
	}
	return big
}

// slowTenant is the organization of every slow evaluation in these tests.
const slowTenant = "org_slow"

// TestASlowExpressionHoldsOnlyItsOrganization: however many slow
// evaluations one organization starts at once, another organization's
// evaluation still runs at once; the organization's own wait for their
// share of the slots, and time out or find none free.
func TestASlowExpressionHoldsOnlyItsOrganization(t *testing.T) {
	slow, err := expr.Compile(slowRule)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := expr.Compile("=answer.value")
	if err != nil {
		t.Fatal(err)
	}
	slots := max(runtime.GOMAXPROCS(0), 2)
	errs := make(chan error, slots)
	for range slots { // as many as the process has evaluation slots
		go func() {
			_, err := slow.Eval(context.Background(), slowTenant, map[string]any{"answer": map[string]any{"value": slowInput()}})
			errs <- err
		}()
	}
	for expr.Running() < max(slots/2, 1) {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if v, err := fast.Eval(context.Background(), "org_other", map[string]any{"answer": map[string]any{"value": 1.0}}); err != nil || v != 1.0 {
		t.Fatalf("another organization's evaluation: %v, %v after %v", v, err, time.Since(start))
	}
	for range slots {
		if err := <-errs; !errors.Is(err, expr.ErrTimeout) && !errors.Is(err, expr.ErrBusy) {
			t.Errorf("slow expression: %v, want ErrTimeout or ErrBusy", err)
		}
	}
	expr.WaitIdle()
}

// BenchmarkScoringRules evaluates a submission's ten rules one call each
// and as one batch.
func BenchmarkScoringRules(b *testing.B) {
	rule, err := expr.Compile(`=$lowercase($string(answer.value)) = $lowercase($string(config.answer))`)
	if err != nil {
		b.Fatal(err)
	}
	tasks := make([]expr.Task, 10)
	for i := range tasks {
		tasks[i] = expr.Task{Expr: rule, Data: map[string]any{
			"answer": map[string]any{"value": true, "files": []any{}},
			"config": map[string]any{"answer": i%2 == 0},
		}}
	}
	b.Run("each", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, t := range tasks {
				if _, err := t.Expr.Eval(context.Background(), "org_bench", t.Data); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("batch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, o := range expr.EvalAll(context.Background(), "org_bench", tasks) {
				if o.Err != nil {
					b.Fatal(o.Err)
				}
			}
		}
	})
}

// TestWaitingForASlotIsNotEvaluating: an evaluation queued behind others
// for longer than Timeout still runs once a slot frees, and one that finds
// no slot within SlotWait reports ErrBusy, not a slow expression.
func TestWaitingForASlotIsNotEvaluating(t *testing.T) {
	fast, err := expr.Compile("=answer.value")
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]any{"answer": map[string]any{"value": 1.0}}
	expr.WaitIdle()
	queued := (expr.Timeout + expr.SlotWait) / 2 // longer than Timeout, within SlotWait
	release := expr.HoldSlots()
	go func() {
		time.Sleep(queued)
		release()
	}()
	if v, err := fast.Eval(context.Background(), "org_queued", data); err != nil || v != 1.0 {
		t.Fatalf("an evaluation queued for %v: %v, %v", queued, v, err)
	}

	release = expr.HoldSlots()
	defer release()
	start := time.Now()
	if _, err := fast.Eval(context.Background(), "org_queued", data); !errors.Is(err, expr.ErrBusy) || time.Since(start) < expr.SlotWait {
		t.Fatalf("with every slot held: %v after %v, want ErrBusy after %v", err, time.Since(start), expr.SlotWait)
	}
}
