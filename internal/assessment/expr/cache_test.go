package expr_test

import (
	"context"
	"sync"
	"testing"

	"github.com/assessd/assessd/internal/assessment/expr"
)

func TestCacheCompilesEachSourceOnce(t *testing.T) {
	c := expr.NewCache(2)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				e, err := c.Compile(`=answer = 1`)
				if err != nil {
					t.Error(err)
					return
				}
				if v, err := e.Eval(context.Background(), "org_cache", map[string]any{"answer": 1.0}); err != nil || v != true {
					t.Errorf("Eval = %v, %v", v, err)
				}
			}
		})
	}
	wg.Wait()
	// Concurrent first uses may each compile; later ones never do.
	if n := c.Compiles(); n < 1 || n > 8 {
		t.Fatalf("400 uses of one source compiled it %d times", n)
	}
	base := c.Compiles()
	if _, err := c.Compile(`=answer = 2`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile(`=(`); err == nil {
		t.Fatal("a bad source compiled")
	}
	if _, err := c.Compile(`=(`); err == nil || c.Compiles() != base+2 {
		t.Fatalf("a bad source was not cached with its error: %v, %d compiles", err, c.Compiles()-base)
	}
	// Size 2: "=answer = 1" is now the least recently used and was dropped.
	if _, err := c.Compile(`=answer = 1`); err != nil || c.Compiles() != base+3 {
		t.Fatalf("the evicted source was not compiled again: %v, %d compiles", err, c.Compiles()-base)
	}
}
