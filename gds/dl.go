package gds

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Default library names and the environment variables that override them
// (tests point them at fakes; a site can point them at a CUDA install).
const (
	DefaultCuFileLib = "libcufile.so.0"
	DefaultCUDALib   = "libcuda.so.1"
	EnvCuFileLib     = "DELTAFS_CUFILE_LIB"
	EnvCUDALib       = "DELTAFS_CUDA_LIB"
)

func cuFileLibName(explicit string) string {
	return libName(explicit, EnvCuFileLib, DefaultCuFileLib)
}

func cudaLibName(explicit string) string {
	return libName(explicit, EnvCUDALib, DefaultCUDALib)
}

func libName(explicit, env, def string) string {
	if explicit != "" {
		return explicit
	}
	if v := os.Getenv(env); v != "" {
		return v
	}
	return def
}

// LibraryError is a shared library that could not be loaded.
type LibraryError struct {
	Lib string // as asked for
	Err error  // dlopen's error
}

func (e *LibraryError) Error() string {
	msg := e.Err.Error()
	if strings.Contains(msg, e.Lib) {
		return msg
	}
	return e.Lib + ": " + msg
}

func (e *LibraryError) Unwrap() error { return e.Err }

// library is a dlopen'ed shared library. It is never closed: CUDA libraries
// do not support being unloaded and reloaded in one process, and dlopen
// reference-counts repeated loads anyway.
type library struct {
	name   string  // as asked for
	file   string  // the file it was loaded from, from /proc/self/maps; may be empty
	handle uintptr // dlopen handle
}

// symbol is one C function to bind: the first of names that the library
// exports is registered into fptr (a pointer to a Go func variable).
type symbol struct {
	names    []string
	fptr     any
	optional bool
}

func openLibrary(name string) (*library, error) {
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, &LibraryError{Lib: name, Err: err}
	}
	return &library{name: name, handle: h}, nil
}

// bind looks every symbol up with dlsym first and registers them only when
// all required ones are present, so a missing function is a *SymbolError
// (never purego's panic) and nothing is half-bound. Optional symbols that
// are missing leave their func nil.
func (l *library) bind(syms []symbol) error {
	addrs := make([]uintptr, len(syms))
	for i, s := range syms {
		var lastErr error
		for _, n := range s.names {
			a, err := purego.Dlsym(l.handle, n)
			if err == nil && a != 0 {
				addrs[i] = a
				break
			}
			lastErr = err
		}
		if addrs[i] != 0 {
			if l.file == "" {
				l.file = mappedFile(addrs[i])
			}
			continue
		}
		if s.optional {
			continue
		}
		if lastErr == nil {
			lastErr = fmt.Errorf("dlsym returned NULL")
		}
		if l.file == "" {
			l.file = l.name
		}
		return &SymbolError{Lib: l.name, File: l.file, Symbol: strings.Join(s.names, " or "), Err: lastErr}
	}
	for i, s := range syms {
		if addrs[i] != 0 {
			purego.RegisterFunc(s.fptr, addrs[i])
		}
	}
	return nil
}

// mappedFile returns the file mapped at addr in this process, from
// /proc/self/maps, or "" when unknown. It is how the probe reports which
// file a library name resolved to.
func mappedFile(addr uintptr) string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 7f1c2a000000-7f1c2a021000 r-xp 00000000 fd:01 1234  /usr/lib/x.so
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if uint64(addr) >= a && uint64(addr) < b {
			return strings.Join(fields[5:], " ")
		}
	}
	return ""
}

// libc gives access to errno, which purego does not report on Linux:
// cuFileRead returns -1 with errno set for filesystem errors.
var libc struct {
	once          sync.Once
	errnoLocation func() *int32
}

// lastErrno returns the calling thread's errno, or 0 when libc's
// __errno_location is unavailable. Call it on the OS thread that made the
// failing call (with runtime.LockOSThread held).
func lastErrno() int32 {
	libc.once.Do(func() {
		l, err := openLibrary("libc.so.6")
		if err != nil {
			return
		}
		_ = l.bind([]symbol{{names: []string{"__errno_location"}, fptr: &libc.errnoLocation}})
	})
	if libc.errnoLocation == nil {
		return 0
	}
	p := libc.errnoLocation()
	if p == nil {
		return 0
	}
	return *p
}

// cString converts a NUL-terminated C string to a Go string.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// goString converts a NUL-terminated byte buffer filled by C to a string.
func goString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

func errnoErr(e int32) error { return syscall.Errno(e) }
