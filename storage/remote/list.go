package remote

import (
	"sort"
	"strings"

	"github.com/deltafs/deltafs/storage"
)

// Listing gathers the objects of a paged list. Servers should answer in
// key order and without repeats; Listing does not rely on it.
type Listing struct {
	out      []storage.ObjectInfo
	unsorted bool
}

// Add appends one object.
func (l *Listing) Add(oi storage.ObjectInfo) {
	if len(l.out) > 0 && oi.Key <= l.out[len(l.out)-1].Key {
		l.unsorted = true
	}
	l.out = append(l.out, oi)
}

// Objects are the objects added, sorted by key, one of each key (a server
// that repeats keys across pages).
func (l *Listing) Objects() []storage.ObjectInfo {
	out := l.out
	if !l.unsorted {
		return out
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	w := 0
	for i := range out {
		if w > 0 && out[w-1].Key == out[i].Key {
			continue
		}
		out[w] = out[i]
		w++
	}
	return out[:w]
}

// ListedKey is the table key of a listed object's full name: ok is false
// for a name outside the table's prefix (tablePrefix) or the listed prefix,
// at or before startAfter (servers that ignore or include it), or ending
// in '/' (folder markers of tools that emulate directories: not objects of
// the table, as directories are not for storage.Local).
func ListedKey(full, tablePrefix, prefix, startAfter string) (key string, ok bool) {
	key, ok = strings.CutPrefix(full, tablePrefix)
	if !ok || !strings.HasPrefix(key, prefix) || key <= startAfter || key == "" || strings.HasSuffix(key, "/") {
		return "", false
	}
	return key, true
}
