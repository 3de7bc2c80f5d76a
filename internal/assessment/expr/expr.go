// Package expr compiles and evaluates the JSONata expressions of question
// type definitions (responseProcessing.condition, grading.fileInputs) with
// the bounds a multi-tenant server needs: expressions come from customers
// and run on every submission.
//
// jsonata-go evaluates recursively and cannot be cancelled, so the bounds
// are enforced around it:
//   - statically, at save time: length, syntax-tree depth and size, no range
//     operator, no $pad (unbounded allocation from a small expression),
//     no $reduce (an accumulator can double on every step), and functions
//     (lambdas) only as the callback argument of a built-in higher-order
//     function, so no function can reach itself: without self-reference
//     there is no recursion beyond the depth of the syntax tree; and the
//     tree with every variable written out is bounded too (MaxInlined), so
//     a block cannot double a value on every step;
//   - on the data: the evaluated JSON is at most MaxDataDepth deep;
//   - at run time: each evaluation has a deadline, at most GOMAXPROCS
//     evaluations run at once, and one organization's take at most half of
//     those places (at least one), so an expression that is slow on large
//     data occupies a bounded share of the CPU and of its own
//     organization's evaluations, never all of the others', and callers
//     stop waiting for it at the deadline.
//
// jsonata-go is not safe for concurrent evaluation (blues/jsonata-go#16,
// decision 0143): its built-in functions are process-wide values that each
// call writes its input into before reading it back, so concurrent
// evaluations could see each other's data, and applying a function with ~>
// appends to the syntax tree on every evaluation. So each evaluation calls
// copies of the built-ins its expression names, and an expression that
// uses ~> is evaluated on a tree of its own.
package expr

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	jsonata "github.com/blues/jsonata-go"
	"github.com/blues/jsonata-go/jparse"
)

// Bounds of an expression and of its evaluation.
const (
	MaxLength    = 2000 // characters of source, "=" included
	MaxTreeDepth = 32   // nesting of the syntax tree
	MaxNodes     = 400  // syntax-tree nodes
	// MaxInlined bounds the syntax tree as it would be with every
	// variable's reference replaced by the expression bound to it.
	MaxInlined   = 4000
	MaxDataDepth = 32 // nesting of the JSON it is evaluated against
	// Timeout is how long a caller waits for one evaluation, from its start
	// (ten times longer under the race detector).
	Timeout = 100 * time.Millisecond * slowdown
	// SlotWait is how long a caller waits for its evaluation slots: a
	// burst of submissions queues for them rather than failing its rules.
	SlotWait = 2 * time.Second
)

// ErrTimeout is returned when an evaluation does not finish in time.
var ErrTimeout = errors.New("expression evaluation timed out")

// ErrBusy is returned when no evaluation slot frees within SlotWait: the
// expressions were not evaluated, and retrying later may succeed.
var ErrBusy = errors.New("expression evaluation slots are busy")

// ErrUndefined is returned when an expression yields no value.
var ErrUndefined = errors.New("expression yields no value")

// Expr is a compiled, checked expression.
type Expr struct {
	src  string
	expr *jsonata.Expr
	// builtins are the library's shared functions the expression names;
	// each evaluation calls copies of them.
	builtins []builtin
	// perEval is set when evaluating changes the syntax tree (~> onto a
	// function call): each evaluation compiles its own.
	perEval bool
}

// String returns the source, with its leading "=".
func (e *Expr) String() string { return e.src }

// callbackFuncs are the built-in higher-order functions whose callback
// argument (the second) may be a function literal.
var callbackFuncs = map[string]bool{"map": true, "filter": true, "sort": true, "single": true, "sift": true, "each": true}

// deniedFuncs cannot be called or rebound.
var deniedFuncs = map[string]string{
	"pad":    "it can allocate without bound",
	"reduce": "its accumulator can grow without bound",
	"eval":   "it would evaluate unchecked expressions",
}

// Compile parses src, which must start with "=", and checks it against the
// static bounds. The error explains what is wrong in words fit for a 400.
func Compile(src string) (*Expr, error) {
	body, ok := strings.CutPrefix(src, "=")
	if !ok {
		return nil, errors.New(`must be a JSONata expression starting with "="`)
	}
	if len(src) > MaxLength {
		return nil, fmt.Errorf("must be at most %d characters", MaxLength)
	}
	if strings.TrimSpace(body) == "" {
		return nil, errors.New(`needs an expression after "="`)
	}
	node, err := jparse.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("is not valid JSONata: %s", parseMessage(err))
	}
	c := checker{bound: []map[string]int{{}}}
	size, err := c.check(reflect.ValueOf(node), 1, false)
	if err != nil {
		return nil, err
	}
	if size > MaxInlined {
		return nil, fmt.Errorf("repeats its variables too often (at most %d terms with every variable written out)", MaxInlined)
	}
	e, err := jsonata.Compile(body)
	if err != nil {
		return nil, fmt.Errorf("is not valid JSONata: %s", parseMessage(err))
	}
	return &Expr{src: src, expr: e, builtins: c.builtins, perEval: c.applies}, nil
}

func parseMessage(err error) string {
	var pe *jparse.Error
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s (at character %d)", pe.Error(), pe.Position+2)
	}
	return err.Error()
}

type checker struct {
	nodes    int
	builtins []builtin
	applies  bool // a ~> onto a function call, which the library rewrites in place
	// bound holds, per scope (the expression, each block and function),
	// the inlined size of each variable assigned in it.
	bound []map[string]int
}

var nodeType = reflect.TypeFor[jparse.Node]()

// check walks the syntax tree generically (every field that holds nodes),
// so node kinds added by the library are still bounded by depth and size.
// It returns the node's inlined size: its terms, with each reference to an
// assigned variable counted as the terms of what was assigned. A block of
// 400 terms can double a string thirty times ($a := $a & $a) and take the
// process's memory; its inlined size is 2^30.
func (c *checker) check(v reflect.Value, depth int, callback bool) (int, error) {
	if !v.IsValid() || (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) && v.IsNil() {
		return 0, nil
	}
	c.nodes++
	if depth > MaxTreeDepth {
		return 0, fmt.Errorf("is nested too deeply (at most %d levels)", MaxTreeDepth)
	}
	if c.nodes > MaxNodes {
		return 0, fmt.Errorf("is too complex (at most %d terms)", MaxNodes)
	}
	n := v.Interface()
	switch n := n.(type) {
	case *jparse.RangeNode:
		return 0, errors.New("may not use the range operator (..)")
	case *jparse.VariableNode:
		if why, ok := deniedFuncs[n.Name]; ok {
			return 0, fmt.Errorf("may not use $%s: %s", n.Name, why)
		}
		if b, ok := sharedBuiltin(n.Name); ok && !slices.ContainsFunc(c.builtins, b.is) {
			c.builtins = append(c.builtins, b)
		}
		return c.boundSize(n.Name), nil
	case *jparse.AssignmentNode:
		if _, ok := deniedFuncs[n.Name]; ok || callbackFuncs[n.Name] {
			return 0, fmt.Errorf("may not rebind the built-in function $%s", n.Name)
		}
		size, err := c.check(reflect.ValueOf(n.Value), depth+1, false)
		c.bound[len(c.bound)-1][n.Name] = size
		return add(1, size), err
	case *jparse.BlockNode, *jparse.LambdaNode, *jparse.TypedLambdaNode:
		if _, ok := n.(*jparse.BlockNode); !ok && !callback {
			return 0, errors.New("may define a function only as the callback of $map, $filter, $sort, $single, $sift or $each")
		}
		// A block's assignments end with it; a function's parameters hide
		// the variables of the same names, and each stands for one value.
		var params []string
		switch l := n.(type) {
		case *jparse.LambdaNode:
			params = l.ParamNames
		case *jparse.TypedLambdaNode:
			params = l.ParamNames
		}
		scope := map[string]int{}
		for _, p := range params {
			scope[p] = 1
		}
		c.bound = append(c.bound, scope)
		defer func() { c.bound = c.bound[:len(c.bound)-1] }()
	case *jparse.FunctionApplicationNode:
		if _, ok := n.RHS.(*jparse.FunctionCallNode); ok {
			c.applies = true
		}
	case *jparse.FunctionCallNode:
		name := ""
		if fn, ok := n.Func.(*jparse.VariableNode); ok {
			name = fn.Name
		}
		size, err := c.check(reflect.ValueOf(n.Func), depth+1, false)
		if err != nil {
			return 0, err
		}
		for i, arg := range n.Args {
			argSize, err := c.check(reflect.ValueOf(arg), depth+1, i == 1 && callbackFuncs[name])
			if err != nil {
				return 0, err
			}
			size = add(size, argSize)
		}
		return add(1, size), nil
	}
	size, err := c.children(v, depth)
	return add(1, size), err
}

// boundSize is the inlined size of a reference to $name: what the
// innermost scope assigning it assigned, or one term.
func (c *checker) boundSize(name string) int {
	for i := len(c.bound) - 1; i >= 0; i-- {
		if size, ok := c.bound[i][name]; ok {
			return size
		}
	}
	return 1
}

// add sums inlined sizes, saturating past MaxInlined so that doubling
// cannot overflow.
func add(a, b int) int { return min(a+b, MaxInlined+1) }

func (c *checker) children(v reflect.Value, depth int) (int, error) {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0, nil
	}
	size := 0
	for i := range v.NumField() {
		fieldSize, err := c.walk(v.Field(i), depth)
		if err != nil {
			return 0, err
		}
		size = add(size, fieldSize)
	}
	return size, nil
}

// walk visits the nodes held by one struct field: a node, a slice or array
// of nodes, or an embedded struct that holds nodes.
func (c *checker) walk(f reflect.Value, depth int) (int, error) {
	switch {
	case f.Type().Implements(nodeType) && f.Kind() != reflect.Struct:
		return c.check(f, depth+1, false)
	case f.Kind() == reflect.Slice || f.Kind() == reflect.Array:
		size := 0
		for j := range f.Len() {
			itemSize, err := c.walk(f.Index(j), depth)
			if err != nil {
				return 0, err
			}
			size = add(size, itemSize)
		}
		return size, nil
	case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.Struct:
		return c.children(f, depth)
	}
	return 0, nil
}

// slots bounds concurrent evaluations (see the package comment).
var slots = make(chan struct{}, max(runtime.GOMAXPROCS(0), 2))

// tenantSlots holds each organization's slots, a channel of half the
// process's capacity, by organization id (see the package comment).
var tenantSlots sync.Map

func tenantSlot(tenant string) chan struct{} {
	if c, ok := tenantSlots.Load(tenant); ok {
		return c.(chan struct{})
	}
	c, _ := tenantSlots.LoadOrStore(tenant, make(chan struct{}, max(cap(slots)/2, 1)))
	return c.(chan struct{})
}

// Eval evaluates e for the organization tenant against data (plain JSON
// values: maps, slices, strings, float64, bool, nil) and returns the
// result. It waits at most SlotWait for free evaluation slots (ErrBusy),
// then at most Timeout for the evaluation (ErrTimeout).
func (e *Expr) Eval(ctx context.Context, tenant string, data map[string]any) (any, error) {
	o := EvalAll(ctx, tenant, []Task{{Expr: e, Data: data}})[0]
	return o.Value, o.Err
}

// Task is one evaluation of a batch: an expression and the data it reads.
type Task struct {
	Expr *Expr
	Data map[string]any
}

// Outcome is what a Task evaluated to.
type Outcome struct {
	Value any
	Err   error
}

// EvalAll evaluates the tasks of the organization tenant in order and
// returns their outcomes. The batch takes one of the organization's slots,
// one of the process's and one goroutine, however many tasks it has: a
// submission's scoring rules cost one hand-off, not one each. The caller
// waits at most SlotWait for the slots (else every task reports ErrBusy),
// then at most Timeout for each evaluation; the evaluation it stopped
// waiting for and those after it report ErrTimeout.
func EvalAll(ctx context.Context, tenant string, tasks []Task) []Outcome {
	out := make([]Outcome, len(tasks))
	if len(tasks) == 0 {
		return out
	}
	fail := func(from int, err error) []Outcome {
		for i := from; i < len(out); i++ {
			out[i].Err = err
		}
		return out
	}
	if ctx.Err() != nil {
		return fail(0, ErrTimeout)
	}
	timer := time.NewTimer(SlotWait)
	defer timer.Stop()
	own := tenantSlot(tenant)
	if !acquire(ctx, timer, own) {
		return fail(0, ErrBusy)
	}
	if !acquire(ctx, timer, slots) {
		<-own
		return fail(0, ErrBusy)
	}
	timer.Reset(Timeout)
	done := make(chan Outcome, len(tasks))
	quit := make(chan struct{}) // closed when the caller stops waiting
	go func() {
		defer func() {
			<-slots
			<-own
		}()
		for _, t := range tasks {
			select {
			case <-quit:
				return
			default:
			}
			done <- t.eval()
		}
	}()
	for i := range out {
		if i > 0 {
			timer.Reset(Timeout)
		}
		select {
		case out[i] = <-done:
		case <-timer.C:
			close(quit)
			return fail(i, ErrTimeout)
		case <-ctx.Done():
			close(quit)
			return fail(i, ErrTimeout)
		}
	}
	return out
}

// acquire takes a place in slot unless the timer fires or ctx ends first.
func acquire(ctx context.Context, timer *time.Timer, slot chan struct{}) bool {
	select {
	case slot <- struct{}{}:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// eval runs one task; a panic in the library is the task's error.
func (t Task) eval() (o Outcome) {
	if depthOf(t.Data, 0) > MaxDataDepth {
		return Outcome{Err: fmt.Errorf("input is nested more than %d levels", MaxDataDepth)}
	}
	defer func() {
		if r := recover(); r != nil {
			o = Outcome{Err: fmt.Errorf("expression failed: %v", r)}
		}
	}()
	e, err := t.Expr.forEval()
	if err != nil {
		return Outcome{Err: err}
	}
	v, err := e.Eval(t.Data)
	if errors.Is(err, jsonata.ErrUndefined) {
		err = ErrUndefined
	}
	return Outcome{v, err}
}

// forEval returns the expression for one evaluation: the compiled tree (a
// tree of its own when evaluating changes it) with copies of the built-ins
// it names registered over the shared ones.
func (e *Expr) forEval() (*jsonata.Expr, error) {
	var ev jsonata.Expr
	if e.perEval {
		fresh, err := jsonata.Compile(strings.TrimPrefix(e.src, "="))
		if err != nil {
			return nil, err
		}
		ev = *fresh
	} else {
		ev = *e.expr // the tree, and a registry of its own
	}
	if len(e.builtins) == 0 {
		return &ev, nil
	}
	copies := make(map[string]any, len(e.builtins))
	for _, b := range e.builtins {
		c := reflect.New(b.fn.Type().Elem())
		c.Elem().Set(b.fn.Elem())
		copies[b.name] = c.Interface()
	}
	return &ev, ev.RegisterVars(copies)
}

// builtin is one of the library's functions that every evaluation shares.
type builtin struct {
	name string
	fn   reflect.Value // a pointer to the library's callable
}

func (b builtin) is(o builtin) bool { return b.name == o.name }

// builtins holds the shared functions found so far, by name. Only
// functions are kept: the names customers give their own variables would
// grow it without bound.
var builtins sync.Map // name → builtin

// sharedBuiltin reports whether $name is one of the library's shared
// functions: evaluated on its own, it gives the same callable every time
// (the time functions are made per evaluation and are not shared).
func sharedBuiltin(name string) (builtin, bool) {
	if b, ok := builtins.Load(name); ok {
		return b.(builtin), true
	}
	lookUp := func() reflect.Value {
		e, err := jsonata.Compile("$" + name)
		if err != nil {
			return reflect.Value{}
		}
		v, err := e.Eval(nil)
		if err != nil {
			return reflect.Value{}
		}
		return reflect.ValueOf(v)
	}
	first, second := lookUp(), lookUp()
	if first.Kind() != reflect.Pointer || first.Elem().Kind() != reflect.Struct || first.Pointer() != second.Pointer() {
		return builtin{}, false
	}
	b := builtin{name: name, fn: first}
	builtins.Store(name, b)
	return b, true
}

func depthOf(v any, d int) int {
	if d > MaxDataDepth {
		return d
	}
	deepest := d
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			deepest = max(deepest, depthOf(x, d+1))
		}
	case []any:
		for _, x := range v {
			deepest = max(deepest, depthOf(x, d+1))
		}
	}
	return deepest
}
