package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/buildinfo"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// Mode says how a write relates to the rows already in the table.
type Mode string

const (
	// ModeAppend adds the rows to the table.
	ModeAppend Mode = "append"
	// ModeOverwrite replaces every row of the table with the rows written.
	ModeOverwrite Mode = "overwrite"
)

// Defaults for Options.
const (
	DefaultRowsPerFile  = 10_000
	DefaultMaxFileBytes = 128 << 20
	DefaultMaxAttempts  = 100
)

// Options configure Write. The zero value appends with the defaults.
type Options struct {
	// Mode is ModeAppend (the default, also for "") or ModeOverwrite.
	Mode Mode
	// RowsPerFile is the most rows a data file holds (DefaultRowsPerFile
	// when 0).
	RowsPerFile int
	// MaxFileBytes closes a data file early once the values written to it
	// reach this many bytes before compression (DefaultMaxFileBytes when 0).
	// A file is built in memory, so this bounds the memory a write uses.
	MaxFileBytes int64
	// IDColumn names a long column the writer numbers itself: the rows get
	// max(IDColumn)+1 of the version read, +2, ... in order (0 for an empty
	// table), whatever value they carry. "" leaves every column as given.
	IDColumn string
	// EngineInfo is commitInfo.engineInfo ("deltafs/" and internal/buildinfo's version when "").
	EngineInfo string
	// MaxAttempts bounds the commit attempts when other writers keep
	// taking the next version (DefaultMaxAttempts when 0).
	MaxAttempts int
}

// Rows is the input of a write.
type Rows interface {
	// Next returns the next row, or io.EOF after the last one. The writer
	// may change the returned Row's IDColumn value.
	Next() (Row, error)
}

// SliceRows is Rows over a slice.
func SliceRows(rows []Row) Rows { return &sliceRows{rows: rows} }

type sliceRows struct{ rows []Row }

func (s *sliceRows) Next() (Row, error) {
	if len(s.rows) == 0 {
		return nil, io.EOF
	}
	r := s.rows[0]
	s.rows = s.rows[1:]
	return r, nil
}

// Result describes a committed write.
type Result struct {
	Version  int64 // the version committed
	Created  bool  // the commit created the table
	Rows     int64 // rows written
	Files    int   // data files added
	Bytes    int64 // bytes of the data files added
	Removed  int   // data files removed (overwrite)
	FirstID  int64 // the first id assigned with IDColumn (-1 when none)
	Attempts int   // commit attempts; more than 1 when other writers won versions
}

// Write writes rows as a new version of the table at st, creating the table
// (with schema) when the location holds none. For an existing table the
// schema must have the table's field names and types, in order. See the
// package doc for how concurrent writers are reconciled.
func Write(ctx context.Context, st storage.Storage, schema *snapshot.StructType, rows Rows, opts Options) (*Result, error) {
	w, err := newWrite(ctx, st, schema, opts)
	if err != nil {
		return nil, err
	}
	if err := w.writeFiles(ctx, rows); err != nil {
		return nil, w.abort(err, -1)
	}
	return w.commit(ctx)
}

// abort is the error of a write that fails after newWrite: an *AbortError
// when it stored data files or may have committed, else err.
func (w *write) abort(err error, maybeCommitted int64) error {
	if len(w.stored) == 0 && maybeCommitted < 0 {
		return err
	}
	return &AbortError{Err: err, Orphans: w.stored, MaybeCommitted: maybeCommitted}
}

// write is one call of Write.
type write struct {
	st       storage.Storage
	opts     Options
	schema   *snapshot.StructType
	cols     []column
	popts    []parquet.WriterOption
	idCol    int   // index of IDColumn in cols, -1 for none
	firstID  int64 // first id assigned
	state    *state
	files    []dataFile
	stored   []string // keys of every data file stored, committed or not
	parts    int      // data files named so far (part numbers)
	rows     int64
	attempts int
}

func newWrite(ctx context.Context, st storage.Storage, schema *snapshot.StructType, opts Options) (*write, error) {
	switch opts.Mode {
	case "":
		opts.Mode = ModeAppend
	case ModeAppend, ModeOverwrite:
	default:
		return nil, fmt.Errorf("unknown write mode %q (append or overwrite)", opts.Mode)
	}
	if opts.RowsPerFile <= 0 {
		opts.RowsPerFile = DefaultRowsPerFile
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.EngineInfo == "" {
		opts.EngineInfo = "deltafs/" + buildinfo.Version()
	}
	cols, err := columns(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	w := &write{st: st, opts: opts, schema: schema, cols: cols, idCol: -1, firstID: -1}
	if opts.IDColumn != "" {
		for i, c := range cols {
			if c.name == opts.IDColumn {
				w.idCol = i
			}
		}
		if w.idCol < 0 || cols[w.idCol].kind != kLong {
			return nil, fmt.Errorf("id column %q must be a long field of the schema", opts.IDColumn)
		}
	}
	s, err := readState(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	if err := w.adopt(s); err != nil {
		return nil, err
	}
	if s.version < 0 {
		if err := checkEmptyLocation(ctx, st); err != nil {
			return nil, err
		}
	}
	w.popts = writerOptions(w.cols, parquetSchema(w.cols))
	if w.idCol >= 0 {
		if w.firstID, err = nextID(ctx, st, s, opts.IDColumn); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// adopt checks that the write fits the table at state s and makes s the
// version the write builds on. Before any data file is written, a column the
// table declares NOT NULL becomes so for the write; after (a table created
// concurrently), the files written must hold no null there.
func (w *write) adopt(s *state) error {
	if s.version >= 0 {
		if err := s.checkWritable(w.opts.Mode); err != nil {
			return fmt.Errorf("%s: %w", w.st.Location(), err)
		}
		if !sameSchema(s.snap.Schema, w.schema) {
			return fmt.Errorf("%s: schema mismatch: the table has %s, the rows have %s", w.st.Location(), s.snap.Schema, w.schema)
		}
		for i := range w.cols {
			if s.snap.Schema.Fields[i].Nullable {
				continue
			}
			if w.popts == nil {
				w.cols[i].nullable = false
				continue
			}
			for _, f := range w.files {
				if f.stats[i].nulls > 0 {
					return fmt.Errorf("%s: column %q is NOT NULL in the table but the rows hold nulls", w.st.Location(), w.cols[i].name)
				}
			}
		}
	}
	w.state = s
	return nil
}

// writeFiles streams rows into data files.
func (w *write) writeFiles(ctx context.Context, rows Rows) error {
	var fw *fileWriter
	flush := func() error {
		if fw == nil || fw.rows == 0 {
			return nil
		}
		data, err := fw.finish()
		if err != nil {
			return err
		}
		f, err := putDataFile(ctx, w.st, w.parts, data, fw.rows, fw.stats, nowMillis)
		if err != nil {
			return err
		}
		w.parts++
		w.files = append(w.files, f)
		w.stored = append(w.stored, f.key)
		fw = nil
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := rows.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if w.idCol >= 0 && len(r) == len(w.cols) {
			r[w.idCol] = w.firstID + w.rows
		}
		if fw == nil {
			fw = newFileWriter(w.cols, w.popts)
		}
		if err := fw.add(r); err != nil {
			return fmt.Errorf("row %d: %w", w.rows, err)
		}
		w.rows++
		if fw.rows >= int64(w.opts.RowsPerFile) || fw.size() >= w.opts.MaxFileBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// commit commits the data files, retrying on the next version while other
// writers win.
func (w *write) commit(ctx context.Context) (*Result, error) {
	for {
		w.attempts++
		s := w.state
		c := commit{
			now:         nowMillis(),
			mode:        w.opts.Mode,
			readVersion: s.version,
			engineInfo:  w.opts.EngineInfo,
			blind:       w.opts.Mode == ModeAppend && w.idCol < 0,
			adds:        w.files,
			cols:        w.cols,
		}
		if s.version < 0 {
			c.create = w.schema
		}
		if w.opts.Mode == ModeOverwrite {
			c.removes = s.liveFiles()
		}
		data, err := c.encode()
		if err != nil {
			return nil, w.abort(fmt.Errorf("encode commit: %w", err), -1)
		}
		version := s.version + 1
		err = w.st.Put(ctx, logKey(version), data, true)
		if err != nil && !errors.Is(err, storage.ErrExist) {
			// The put may have landed all the same (an interrupted or
			// cut-off request): look before saying anything.
			ok, known := landed(ctx, w.st, logKey(version), data)
			switch {
			case !known:
				return nil, w.abort(fmt.Errorf("commit version %d: %w", version, err), version)
			case ok:
				err = nil
			}
		}
		if err == nil {
			res := &Result{Version: version, Created: c.create != nil, Rows: w.rows, Files: len(w.files),
				Removed: len(c.removes), FirstID: -1, Attempts: w.attempts}
			for _, f := range w.files {
				res.Bytes += f.size
			}
			if w.idCol >= 0 && w.rows > 0 {
				res.FirstID = w.firstID
			}
			return res, nil
		}
		if !errors.Is(err, storage.ErrExist) {
			return nil, w.abort(fmt.Errorf("commit version %d: %w", version, err), -1)
		}
		if w.attempts >= w.opts.MaxAttempts {
			return nil, w.abort(fmt.Errorf("commit: gave up after %d attempts: other writers kept taking the next version (last tried %d)", w.attempts, version), -1)
		}
		if err := w.rebase(ctx, version); err != nil {
			return nil, w.abort(err, -1)
		}
	}
}

// rebase brings the write up to the latest version after losing version
// lost: it replays the commits it missed, re-checks the table and, with an
// id column, renumbers its data files when their ids are no longer unique.
func (w *write) rebase(ctx context.Context, lost int64) error {
	var s *state
	for try := 0; ; try++ {
		var err error
		if s, err = readState(ctx, w.st, w.state); err != nil {
			return err
		}
		if s.version >= lost {
			break
		}
		// The put said the commit exists but the listing does not show it
		// yet: wait for it, briefly.
		if try == 50 {
			return fmt.Errorf("commit %d exists but the log listing does not show it", lost)
		}
		sleep(ctx, time.Duration(10+try)*time.Millisecond)
	}
	created := w.state.version < 0
	if err := w.adopt(s); err != nil {
		if created {
			return fmt.Errorf("the table was created concurrently by another writer: %w", err)
		}
		return err
	}
	if w.idCol >= 0 && w.rows > 0 {
		next, err := nextID(ctx, w.st, s, w.opts.IDColumn)
		if err != nil {
			return err
		}
		if next > w.firstID {
			if err := w.shiftIDs(ctx, next-w.firstID); err != nil {
				return err
			}
		}
	}
	// Spread competing writers out a little.
	sleep(ctx, time.Duration(rand.IntN(5*w.attempts+1))*time.Millisecond)
	return ctx.Err()
}

// shiftIDs rewrites every data file of the write with ids shifted by delta.
func (w *write) shiftIDs(ctx context.Context, delta int64) error {
	files := make([]dataFile, len(w.files))
	for i, f := range w.files {
		nf, err := shiftIDs(ctx, w.st, w.cols, w.popts, f, w.parts, w.idCol, delta, nowMillis)
		if err != nil {
			return err
		}
		w.stored = append(w.stored, nf.key)
		w.parts++
		files[i] = nf
	}
	w.files = files
	w.firstID += delta
	return nil
}

func nowMillis() int64 { return time.Now().UnixMilli() }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
