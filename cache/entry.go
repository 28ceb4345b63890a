package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// Entry file format (version 1). All integers are little-endian.
//
//	offset  size  field
//	0       8     magic "DFSCACH1"
//	8       4     format version (1)
//	12      4     header length H: a multiple of 4096, at least 4096; the payload offset
//	16      8     payload length N
//	24      8     xxhash64 of the payload
//	32      8     creation time, Unix nanoseconds (informational)
//	40      4     key text length K
//	44      4     reserved, zero
//	48      K     key text (Key.String)
//	48+K    8     xxhash64 of header bytes [0, 48+K)
//	...           zeros up to H
//	H       N     payload, contiguous
//	H+N           zeros up to the next multiple of 4096
//
// A valid entry file is exactly H + roundUp(N, 4096) bytes long, so the
// payload starts 4 KiB-aligned (O_DIRECT and GPUDirect Storage read it in
// place, see Cache.Locate) and its last block lies wholly inside the file.
const (
	magic         = "DFSCACH1"
	formatVersion = 1
	blockSize     = 4096
	fixedHeader   = 48
)

// errKeyMismatch means the entry at a key's path holds another key: a sha256
// collision, or (far likelier) a bug. It is a miss, not corruption.
var errKeyMismatch = errors.New("entry holds a different key")

// corruptError says why an entry file is not a valid entry.
type corruptError struct{ reason string }

func (e *corruptError) Error() string { return "corrupt cache entry: " + e.reason }

func corrupt(format string, args ...any) error {
	return &corruptError{reason: fmt.Sprintf(format, args...)}
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// headerLen is H for a key text of k bytes.
func headerLen(k int) int64 { return roundUp(int64(fixedHeader+k+8), blockSize) }

// entryFileSize is the size of a valid entry file, which is also what the
// entry costs the disk budget.
func entryFileSize(keyLen int, payloadLen int64) int64 {
	return headerLen(keyLen) + roundUp(payloadLen, blockSize)
}

// EntrySize is what an entry of key holding payload bytes costs the disk
// budget: its file size, header and payload rounded up to 4 KiB each.
func EntrySize(key Key, payload int64) int64 {
	return entryFileSize(len(key.String()), payload)
}

// encodeHeader returns the H header bytes of an entry, padded with zeros.
func encodeHeader(keyText string, payload []byte, created int64) []byte {
	h := headerLen(len(keyText))
	hdr := make([]byte, h)
	copy(hdr[0:8], magic)
	le := binary.LittleEndian
	le.PutUint32(hdr[8:], formatVersion)
	le.PutUint32(hdr[12:], uint32(h))
	le.PutUint64(hdr[16:], uint64(len(payload)))
	le.PutUint64(hdr[24:], xxhash.Sum64(payload))
	le.PutUint64(hdr[32:], uint64(created))
	le.PutUint32(hdr[40:], uint32(len(keyText)))
	copy(hdr[fixedHeader:], keyText)
	end := fixedHeader + len(keyText)
	le.PutUint64(hdr[end:], xxhash.Sum64(hdr[:end]))
	return hdr
}

// header is the decoded, checksum-verified fixed part of an entry header.
type header struct {
	hdrLen  int64
	n       int64
	sum     uint64
	keyText []byte // aliases the read buffer; valid until the buffer is reused
}

// smallEntry: entry files up to this size are read with one pread into a
// pooled buffer and the payload copied out; larger ones read the header
// block, then the payload straight into its own slice.
const smallEntry = 32 << 10

// readPool recycles read buffers of smallEntry bytes. They never escape
// readEntry: the payload is always a fresh allocation the caller may keep.
var readPool = sync.Pool{New: func() any { b := make([]byte, smallEntry); return &b }}

// readEntry opens the entry file at path, verifies it completely (magic,
// header checksum, key text, exact file size, payload checksum) and returns
// its payload, header length and file size. Errors: fs.ErrNotExist-wrapping
// when the file is gone, *corruptError when it is invalid, errKeyMismatch
// when it belongs to another key, anything else for I/O failures.
func readEntry(path, keyText string) (payload []byte, hdrLen int64, size int64, err error) {
	f, err := openRead(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.close()
	if size, err = f.size(); err != nil {
		return nil, 0, 0, err
	}
	if size < blockSize {
		return nil, 0, size, corrupt("%d bytes, shorter than one header block", size)
	}
	bp := readPool.Get().(*[]byte)
	defer readPool.Put(bp)
	buf := (*bp)[:min(size, smallEntry)]
	if err := f.readAt(buf, 0); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, size, corrupt("truncated while reading")
		}
		return nil, 0, size, err
	}
	h, err := parseHeader(buf)
	if err == errLongHeader {
		// Key text longer than the buffer: read the whole header.
		long := make([]byte, binary.LittleEndian.Uint32(buf[12:]))
		if int64(len(long)) > size {
			return nil, 0, size, corrupt("header length %d beyond file size %d", len(long), size)
		}
		if err := f.readAt(long, 0); err != nil {
			return nil, 0, size, fmt.Errorf("read header: %w", err)
		}
		h, err = parseHeader(long)
	}
	if err != nil {
		return nil, 0, size, err
	}
	if string(h.keyText) != keyText {
		return nil, 0, size, fmt.Errorf("%w: %s", errKeyMismatch, strconv.Quote(string(h.keyText)))
	}
	if want := h.hdrLen + roundUp(h.n, blockSize); size != want {
		return nil, 0, size, corrupt("file is %d bytes, header says %d", size, want)
	}
	payload = make([]byte, h.n)
	if end := h.hdrLen + h.n; end <= int64(len(buf)) {
		copy(payload, buf[h.hdrLen:end])
	} else if err := f.readAt(payload, h.hdrLen); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, size, corrupt("truncated payload")
		}
		return nil, 0, size, err
	}
	if got := xxhash.Sum64(payload); got != h.sum {
		return nil, 0, size, corrupt("payload checksum %016x, header says %016x", got, h.sum)
	}
	return payload, h.hdrLen, size, nil
}

var errLongHeader = errors.New("header longer than the buffer")

// parseHeader decodes and verifies the header at the start of buf.
func parseHeader(buf []byte) (header, error) {
	le := binary.LittleEndian
	if len(buf) < fixedHeader || string(buf[0:8]) != magic {
		return header{}, corrupt("bad magic")
	}
	if v := le.Uint32(buf[8:]); v != formatVersion {
		return header{}, corrupt("format version %d", v)
	}
	h := header{
		hdrLen: int64(le.Uint32(buf[12:])),
		n:      int64(le.Uint64(buf[16:])),
		sum:    le.Uint64(buf[24:]),
	}
	k := int64(le.Uint32(buf[40:]))
	if h.hdrLen < blockSize || h.hdrLen%blockSize != 0 || h.hdrLen != headerLen(int(min(k, maxKeyText+1))) || k > maxKeyText {
		return header{}, corrupt("header length %d for a %d-byte key", h.hdrLen, k)
	}
	if h.n < 0 {
		return header{}, corrupt("negative payload length")
	}
	if h.hdrLen > int64(len(buf)) {
		return header{}, errLongHeader
	}
	end := fixedHeader + k
	if got, want := xxhash.Sum64(buf[:end]), le.Uint64(buf[end:]); got != want {
		return header{}, corrupt("header checksum %016x, stored %016x", got, want)
	}
	h.keyText = buf[fixedHeader:end]
	return h, nil
}
