// Package wakeup lets requests wait for news of a key that arrives from
// elsewhere, such as a PostgreSQL notification that a result was finished.
//
// A waiter registers before it looks at the state it waits on, then waits
// on the channel it got: news that arrives between the look and the wait
// is not lost.
package wakeup

import "sync"

// Hub holds the waiters by key. While it is offline (its source of news is
// down) waiters learn nothing from it and must look again on their own.
type Hub struct {
	mu     sync.Mutex
	keys   map[string]*key
	online bool
	closed bool
}

// key is one key's waiters: they share woken, closed at the key's news.
type key struct {
	woken   chan struct{}
	waiters int
}

// New returns an empty Hub, offline until SetOnline(true).
func New() *Hub { return &Hub{keys: map[string]*key{}} }

// Wait registers a waiter for k. The channel is closed on news of k, when
// the hub goes online or offline, or when it closes; release drops the
// waiter and must be called once it stops waiting. ok is false once the
// hub is closed: there is nothing to wait for.
func (h *Hub) Wait(k string) (woken <-chan struct{}, release func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, func() {}, false
	}
	w := h.keys[k]
	if w == nil {
		w = &key{woken: make(chan struct{})}
		h.keys[k] = w
	}
	w.waiters++
	return w.woken, func() { h.release(k, w) }, true
}

func (h *Hub) release(k string, w *key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.waiters--
	if w.waiters == 0 && h.keys[k] == w {
		delete(h.keys, k)
	}
}

// Wake wakes k's waiters.
func (h *Hub) Wake(k string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.keys[k]; w != nil {
		close(w.woken)
		delete(h.keys, k)
	}
}

// SetOnline records whether news arrives, and wakes every waiter: news may
// have been missed while offline, and waiters poll while it is.
func (h *Hub) SetOnline(online bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.online = online
	h.wakeAll()
}

// Online reports whether news arrives.
func (h *Hub) Online() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.online
}

// Close wakes every waiter and refuses new ones, for a shutdown that should
// not wait out their waits.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed, h.online = true, false
	h.wakeAll()
}

func (h *Hub) wakeAll() {
	for k, w := range h.keys {
		close(w.woken)
		delete(h.keys, k)
	}
}
