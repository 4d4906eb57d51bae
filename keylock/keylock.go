// Package keylock serialises work per key: callers with the same key run
// one at a time, different keys run freely, and a key nobody holds costs
// nothing. It suits "look in the cache, else make it and store it", where
// the second caller must find what the first stored.
package keylock

import "sync"

// Locks is a set of per-key mutexes. The zero value is ready to use.
type Locks struct {
	mu    sync.Mutex
	locks map[string]*entry
}

type entry struct {
	mu   sync.Mutex
	refs int
}

// Lock waits for key and returns its unlock. Unlock runs once, typically
// deferred, so a panic in between still frees the key.
func (l *Locks) Lock(key string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*entry{}
	}
	e := l.locks[key]
	if e == nil {
		e = &entry{}
		l.locks[key] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
}

// Held is the number of keys locked or waited for, for tests.
func (l *Locks) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}
