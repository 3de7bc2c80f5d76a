package expr

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// Cache keeps compiled expressions by source, so a scoring rule is parsed
// and checked once rather than on every answer it scores. The source is the
// key: a question type revision that changes its rule brings a new source
// and so a new compilation, and revisions that keep it share one. The cache
// holds at most its size in expressions, dropping the least recently used.
// One Expr serves every caller: evaluations run one at a time and leave it
// as it was (see the package comment). A Cache is safe for concurrent use.
type Cache struct {
	size     int
	mu       sync.Mutex
	order    *list.List // of *cached, most recently used first
	bySource map[string]*list.Element
	compiles atomic.Int64
}

type cached struct {
	src  string
	expr *Expr
	err  error
}

// NewCache returns a cache of at most size expressions.
func NewCache(size int) *Cache {
	return &Cache{size: max(size, 1), order: list.New(), bySource: map[string]*list.Element{}}
}

// Compile returns the compiled src, compiling it on first use. A source that
// does not compile is cached with its error too: a stored rule that fails
// once fails the same way every time.
func (c *Cache) Compile(src string) (*Expr, error) {
	c.mu.Lock()
	if el, ok := c.bySource[src]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*cached)
		c.mu.Unlock()
		return e.expr, e.err
	}
	c.mu.Unlock()
	// Compiled outside the lock: two first uses at once may both compile,
	// which costs less than making every other rule wait.
	e, err := Compile(src)
	c.compiles.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.bySource[src]; !ok {
		c.bySource[src] = c.order.PushFront(&cached{src: src, expr: e, err: err})
		if c.order.Len() > c.size {
			oldest := c.order.Back()
			c.order.Remove(oldest)
			delete(c.bySource, oldest.Value.(*cached).src)
		}
	}
	return e, err
}

// Compiles reports how many compilations the cache has run: the misses.
func (c *Cache) Compiles() int64 { return c.compiles.Load() }
