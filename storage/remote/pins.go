package remote

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// Pins are the identities of objects as first seen, by key. A backend pins
// a key's identity on its first Stat or read and checks (or reads through)
// it afterwards, so that bytes of two versions of an object never mix.
// The zero value is ready; methods are safe for concurrent use.
type Pins[P any] struct {
	mu sync.RWMutex
	m  map[string]P
}

// Get returns key's pin.
func (ps *Pins[P]) Get(key string) (P, bool) {
	ps.mu.RLock()
	p, ok := ps.m[key]
	ps.mu.RUnlock()
	return p, ok
}

// Keep pins p for key unless key is pinned already, and returns the pin
// that holds (the first seen wins a race) and whether it was there before.
func (ps *Pins[P]) Keep(key string, p P) (P, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if old, ok := ps.m[key]; ok {
		return old, true
	}
	if ps.m == nil {
		ps.m = map[string]P{}
	}
	ps.m[key] = p
	return p, false
}

// Unpin forgets key's pin.
func (ps *Pins[P]) Unpin(key string) {
	ps.mu.Lock()
	delete(ps.m, key)
	ps.mu.Unlock()
}

// Len is the number of keys pinned.
func (ps *Pins[P]) Len() int {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(ps.m)
}

// Pin is an identity by size and ETag (S3, Azure).
type Pin struct {
	Size    int64
	ETag    string // normalised (see NormETag); "" when the server sent none
	RawETag string // as sent, for If-Match ("" when not kept)
	Mod     time.Time
}

// NormETag drops a weak marker and the quotes of an ETag.
func NormETag(s string) string {
	return strings.Trim(strings.TrimPrefix(s, "W/"), `"`)
}

// Info is the pin as a storage.ObjectInfo of key.
func (p Pin) Info(key string) storage.ObjectInfo {
	return storage.ObjectInfo{Key: key, Size: p.Size, ModTime: p.Mod, ETag: p.ETag}
}

// PinETag pins p for key (unless mutable) and returns "" or, when another
// identity is pinned already (another size, or another ETag where both
// have one), the difference in words for an ErrChanged message.
func PinETag(ps *Pins[Pin], key string, p Pin, mutable bool) string {
	if mutable {
		return ""
	}
	old, had := ps.Keep(key, p)
	if had && (old.Size != p.Size || (old.ETag != "" && p.ETag != "" && old.ETag != p.ETag)) {
		return fmt.Sprintf("pinned %d bytes ETag %q, now %d bytes ETag %q", old.Size, old.ETag, p.Size, p.ETag)
	}
	return ""
}
