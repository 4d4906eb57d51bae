package keylock

import (
	"sync"
	"testing"
)

// Same key: one at a time (the counter never sees two inside); different
// keys do not wait for each other; every key is forgotten once free.
func TestLocks(t *testing.T) {
	var l Locks
	var inside, most int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := l.Lock("a")
			defer unlock()
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			mu.Lock()
			inside--
			mu.Unlock()
		}()
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d callers held the same key at once", most)
	}
	unlockA := l.Lock("a")
	unlockB := l.Lock("b") // would deadlock if keys shared a lock
	unlockB()
	unlockA()
	if n := l.Held(); n != 0 {
		t.Errorf("%d keys still held", n)
	}
}

// A panic between Lock and a deferred unlock frees the key.
func TestPanicFreesKey(t *testing.T) {
	var l Locks
	func() {
		defer func() { recover() }()
		unlock := l.Lock("k")
		defer unlock()
		panic("boom")
	}()
	unlock := l.Lock("k")
	unlock()
	if l.Held() != 0 {
		t.Error("key still held after the panic")
	}
}
