package sharing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// Reading data files through pre-signed URLs. A URL is used while more
// than a third of its lifetime (from the query that gave it to its
// expirationTimestamp) is left; past that, the version it came from is
// queried again, once for every file of that version, before the read.
// A URL the file server refuses anyway (a clock ahead of ours, a URL
// revoked early) is renewed once and the read tried again.
//
// The file server must serve the file the answer announced: a size other
// than the add action's (in Content-Range or Content-Length), or fewer
// bytes than a range within that size, fails the read with one line, so
// that no caller gets a shorter or longer file than the log says. (Bytes
// that differ at the same size cannot be told apart here: the protocol
// shares no checksum; the Parquet reader's own checks stand.)

// ReadAt reads len(p) bytes of a file at off.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if s.isClosed() {
		return 0, errClosed
	}
	s.mu.Lock()
	o, isLog := s.objects[key]
	u := s.urls[key]
	s.mu.Unlock()
	if isLog {
		if o.err != nil {
			return 0, o.err
		}
		return bytes.NewReader(o.data).ReadAt(p, off)
	}
	if u == nil {
		return 0, fmt.Errorf("%s: %w", key, storage.ErrNotExist)
	}
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", key, off)
	}
	want := int64(len(p))
	if u.size >= 0 {
		if off >= u.size {
			return 0, io.EOF
		}
		want = min(want, u.size-off)
	}
	if want == 0 {
		return 0, nil
	}
	b, err := s.get(ctx, key, off, want, u.size)
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// coalesceGap is the largest gap between two ranges read in one GET.
const coalesceGap = 1 << 20

// ReadRanges reads several ranges of a file, neighbours (less than 1 MiB
// apart) in one GET (storage.RangeReader).
func (s *Store) ReadRanges(ctx context.Context, key string, ranges []storage.Range) ([][]byte, error) {
	idx := make([]int, len(ranges))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return ranges[idx[a]].Off < ranges[idx[b]].Off })
	out := make([][]byte, len(ranges))
	for i := 0; i < len(idx); {
		lo, hi := ranges[idx[i]].Off, ranges[idx[i]].Off+ranges[idx[i]].Len
		j := i + 1
		for j < len(idx) && ranges[idx[j]].Off <= hi+coalesceGap {
			hi = max(hi, ranges[idx[j]].Off+ranges[idx[j]].Len)
			j++
		}
		buf, err := storage.ReadRange(ctx, s, key, lo, hi-lo)
		if err != nil {
			return nil, err
		}
		for _, k := range idx[i:j] {
			r := ranges[k]
			out[k] = buf[r.Off-lo : r.Off-lo+r.Len : r.Off-lo+r.Len]
		}
		i = j
	}
	return out, nil
}

// get reads n bytes at off (fewer at the end of the file, when its size
// is not known: size -1).
func (s *Store) get(ctx context.Context, key string, off, n, size int64) ([]byte, error) {
	var last error
	renewed := false
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 && !renewed {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%s: %w", key, ctx.Err())
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		u, err := s.fresh(ctx, key, false)
		if err != nil {
			return nil, err
		}
		b, status, err := s.rangeGET(ctx, u, off, n, size)
		if err == nil {
			return b, nil
		}
		last = fmt.Errorf("%s: %w", key, err)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", key, ctx.Err())
		}
		switch {
		case status == 401 || status == 403 || status == 400:
			// The URL is refused: renew it once.
			if renewed {
				return nil, last
			}
			if _, err := s.fresh(ctx, key, true); err != nil {
				if errors.Is(err, errRenewedRecently) {
					return nil, fmt.Errorf("%w (its URL was renewed less than %v ago)", last, renewFloor)
				}
				return nil, err
			}
			renewed = true
		case status == 404:
			return nil, fmt.Errorf("%s: %w (the file server answered 404)", key, storage.ErrNotExist)
		case status != 0 && status < 500 && status != 429:
			return nil, last
		}
	}
	return nil, last
}

// rangeGET is one ranged GET, within the time limit of one attempt;
// status is the HTTP status (0: no answer). size is the file's size as
// announced (-1: not known): the file server must agree with it.
func (s *Store) rangeGET(ctx context.Context, u string, off, n, size int64) ([]byte, int, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.c.timeout, &timeoutError{d: s.c.timeout, whole: true})
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, errors.New("bad pre-signed URL")
	}
	req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(off+n-1, 10))
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("reading through the pre-signed URL: %v", fileNetErr(ctx, err))
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != off {
			return nil, resp.StatusCode, fmt.Errorf("the file server answered range %q for bytes %d-%d", resp.Header.Get("Content-Range"), off, off+n-1)
		}
		if size >= 0 && total >= 0 && total != size {
			return nil, resp.StatusCode, sizeMismatch(total, size)
		}
	case http.StatusOK:
		if off != 0 {
			return nil, resp.StatusCode, errors.New("the file server ignored the byte range")
		}
		if size >= 0 && resp.ContentLength >= 0 && resp.ContentLength != size {
			return nil, resp.StatusCode, sizeMismatch(resp.ContentLength, size)
		}
	case http.StatusRequestedRangeNotSatisfiable:
		if size >= 0 {
			// ReadAt asks for no byte past the announced size.
			return nil, resp.StatusCode, fmt.Errorf("the file server has no byte %d, the share announced %d bytes", off, size)
		}
		return nil, 0, nil // past the end: io.EOF for the caller
	default:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil, resp.StatusCode, fmt.Errorf("the file server answered %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, n))
	if err != nil {
		return nil, 0, fmt.Errorf("reading through the pre-signed URL: %v", fileNetErr(ctx, err))
	}
	if size >= 0 && int64(len(b)) < n {
		return nil, resp.StatusCode, fmt.Errorf("the file server sent %d bytes of the %d at %d, within the announced %d", len(b), n, off, size)
	}
	return b, resp.StatusCode, nil
}

// sizeMismatch is a file server whose file is not the size announced.
func sizeMismatch(got, want int64) error {
	return fmt.Errorf("the file server has %d bytes for the file, the share announced %d", got, want)
}

// fileNetErr is a data GET's transport error: the attempt's time limit
// when that is what ended it, else the error without its URL.
func fileNetErr(ctx context.Context, err error) error {
	var te *timeoutError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &te) {
		return te
	}
	return cleanNetErr(err)
}

// contentRange parses "bytes a-b/total" (total -1 when "*").
func contentRange(h string) (start, total int64, ok bool) {
	h, ok = strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, 0, false
	}
	rng, tot, ok := strings.Cut(h, "/")
	if !ok {
		return 0, 0, false
	}
	a, _, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}

// probeSize learns the size of a file the answer gave none for (a
// deletion vector's) from a one-byte GET.
func (s *Store) probeSize(ctx context.Context, key string) (int64, error) {
	u, err := s.fresh(ctx, key, false)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.c.timeout, &timeoutError{d: s.c.timeout, whole: true})
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: bad pre-signed URL", key)
	}
	req.Header.Set("Range", "bytes=0-0")
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: reading through the pre-signed URL: %v", key, fileNetErr(ctx, err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode == http.StatusPartialContent {
		if _, total, ok := contentRange(resp.Header.Get("Content-Range")); ok && total >= 0 {
			return total, nil
		}
	}
	if resp.StatusCode == http.StatusOK && resp.ContentLength >= 0 {
		return resp.ContentLength, nil
	}
	return 0, fmt.Errorf("%s: the file server gave no size (%s)", key, resp.Status)
}

// fresh is a URL for key with a third of its lifetime left, renewed first
// when it has less (or when force).
func (s *Store) fresh(ctx context.Context, key string, force bool) (string, error) {
	s.mu.Lock()
	u := s.urls[key]
	s.mu.Unlock()
	if u == nil {
		return "", fmt.Errorf("%s: %w", key, storage.ErrNotExist)
	}
	if !force && !needsRenewal(u, time.Now()) {
		return u.url, nil
	}
	old := u.url
	_, err, _ := s.flight.Do(strconv.FormatInt(u.from, 10), func() (any, error) {
		s.mu.Lock()
		cur := s.urls[key]
		if cur != nil && cur.url != old && !needsRenewal(cur, time.Now()) {
			s.mu.Unlock()
			return nil, nil // renewed by a call that just ended
		}
		if time.Since(s.renewed[u.from]) < renewFloor {
			s.mu.Unlock()
			return nil, errRenewedRecently
		}
		s.renewed[u.from] = time.Now()
		s.mu.Unlock()
		return nil, s.renew(context.WithoutCancel(ctx), u.from)
	})
	if errors.Is(err, errRenewedRecently) {
		// URLs that are stale as soon as they come (an expiry in the
		// past), or refused as soon as renewed: the version is queried
		// again once per renewFloor at most, not once per read.
		if force {
			return "", err
		}
		return old, nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: renewing its pre-signed URL: %w", key, err)
	}
	s.mu.Lock()
	u = s.urls[key]
	s.mu.Unlock()
	if u == nil || u.url == old && force {
		return "", fmt.Errorf("%s: the share no longer lists the file", key)
	}
	return u.url, nil
}

// renewFloor is the least time between two queries of one version for
// fresh URLs (successful or not).
const renewFloor = time.Second

var errRenewedRecently = errors.New("renewed less than renewFloor ago")

func needsRenewal(u *urlState, now time.Time) bool {
	if u.expires == 0 {
		return false
	}
	exp := time.UnixMilli(u.expires)
	left := exp.Sub(now)
	return left < exp.Sub(u.fetched)/3
}

// renew queries version from (-1: the current version) again and takes
// the URLs of its files.
func (s *Store) renew(ctx context.Context, from int64) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var vp *int64
	if from >= 0 {
		vp = &from
	}
	r, err := s.c.Query(ctx, vp)
	if err != nil {
		return err
	}
	a, err := parseVersion(r)
	if err != nil {
		return err
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range a.files {
		for _, u := range f.urls {
			if cur := s.urls[u.key]; cur != nil && cur.from == from {
				if cur.size >= 0 && u.size >= 0 && cur.size != u.size {
					continue // another file under the same key now
				}
				s.urls[u.key] = &urlState{signedURL: u, fetched: now, from: from}
				n++
			}
		}
	}
	s.log.Info("delta sharing: renewed pre-signed URLs", "table", s.loc, "version", r.Version, "files", n)
	return nil
}
