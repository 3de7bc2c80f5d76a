package wakeup_test

import (
	"testing"

	"github.com/assessd/assessd/internal/platform/wakeup"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Wake wakes every waiter of its key and no other; a waiter registered
// after the news waits for the next.
func TestWakeWakesTheKeysWaiters(t *testing.T) {
	h := wakeup.New()
	a1, release1, _ := h.Wait("a")
	a2, release2, _ := h.Wait("a")
	b, releaseB, _ := h.Wait("b")
	defer releaseB()
	h.Wake("a")
	if !closed(a1) || !closed(a2) || closed(b) {
		t.Fatalf("after Wake(a): a1 %v, a2 %v, b %v", closed(a1), closed(a2), closed(b))
	}
	release1()
	release2()
	next, release, _ := h.Wait("a")
	defer release()
	if closed(next) {
		t.Fatal("a waiter registered after the news was woken by it")
	}
	h.Wake("a")
	if !closed(next) {
		t.Fatal("the next news did not wake the next waiter")
	}
}

// A released waiter's key is forgotten: news of it wakes nothing, and a
// later waiter gets a fresh channel.
func TestReleaseForgetsTheKey(t *testing.T) {
	h := wakeup.New()
	first, release, _ := h.Wait("a")
	release()
	h.Wake("a")
	if closed(first) {
		t.Fatal("news woke a released waiter")
	}
	again, release, _ := h.Wait("a")
	defer release()
	if again == first {
		t.Fatal("a released key's channel was reused")
	}
}

// Going online or offline wakes everyone, since news may have been missed;
// Close wakes everyone and refuses new waiters.
func TestOnlineOfflineAndClose(t *testing.T) {
	h := wakeup.New()
	if h.Online() {
		t.Fatal("a new hub is online")
	}
	w, release, _ := h.Wait("a")
	h.SetOnline(true)
	release()
	if !h.Online() || !closed(w) {
		t.Fatalf("going online: online %v, woken %v", h.Online(), closed(w))
	}
	w, release, _ = h.Wait("b")
	h.SetOnline(false)
	release()
	if h.Online() || !closed(w) {
		t.Fatalf("going offline: online %v, woken %v", h.Online(), closed(w))
	}
	h.SetOnline(true)
	w, release, _ = h.Wait("c")
	h.Close()
	release()
	if h.Online() || !closed(w) {
		t.Fatalf("closing: online %v, woken %v", h.Online(), closed(w))
	}
	if _, release, ok := h.Wait("d"); ok {
		release()
		t.Fatal("a closed hub took a waiter")
	}
}
