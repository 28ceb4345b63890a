package sample

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/deltafs/deltafs/snapshot"
)

// imageMode: a sample is a data column's raw uint8 pixels of a fixed
// shape (Spec.Image), encoded as PNG or PGM/PPM (image.go). Every sample
// has the same size and extension, so indexing a file reads nothing of
// the data column; a value of another length fails its sample
// (SampleError), never a wrong image.
type imageMode struct {
	dataColumn
	image     Image
	format    string // FormatPNG or FormatPNM
	extension string
	encSize   int64 // the encoded size of every sample
}

// validateImage checks the image options of the spec on its own.
func (s *Spec) validateImage() error {
	switch s.ImageFormat {
	case "", FormatPNG:
	case FormatPNM:
		if s.Image.H > 0 && s.Image.C != 1 && s.Image.C != 3 {
			return fmt.Errorf("--image-format pnm needs 1 or 3 channels, not %d", s.Image.C)
		}
	default:
		return fmt.Errorf("--image-format %q: want png or pnm", s.ImageFormat)
	}
	if s.ImageFormat != "" && s.Image.H == 0 {
		return errors.New("--image-format needs --image")
	}
	return nil
}

// newImageMode checks that the schema has the data column --image needs.
func (s *Spec) newImageMode(schema *snapshot.StructType, data *column) (*imageMode, error) {
	if data == nil {
		if s.DataColumn == NoData {
			return nil, errors.New("--image needs a data column: use --data-column with the binary column of raw pixels, not -")
		}
		bins := binaryColumns(schema)
		if len(bins) == 0 {
			return nil, errors.New("--image: the table has no binary column; name one with --data-column")
		}
		return nil, fmt.Errorf("--image: the table has %d binary columns (%s); choose one with --data-column", len(bins), strings.Join(bins, ", "))
	}
	if err := checkData(data); err != nil {
		return nil, err
	}
	if data.typ != "binary" {
		return nil, fmt.Errorf("--image: data column %s is %s, not raw pixels; use --data-column with the binary column of pixels", data.name, data.typ)
	}
	m := &imageMode{dataColumn: dataColumn{data: data}, image: s.Image, format: s.ImageFormat}
	if m.format == "" {
		m.format = FormatPNG
	}
	if m.format == FormatPNG {
		m.extension, m.encSize = ".png", s.Image.PNGSize()
	} else {
		m.extension, m.encSize = s.Image.pnmExt(), s.Image.PNMSize()
	}
	return m, nil
}

func (m *imageMode) identity() string { return "m2" }

func (m *imageMode) describe() string {
	return fmt.Sprintf("data=%s (raw %s pixels as %s, %d bytes each)", m.data.name, m.image, m.format, m.encSize)
}

func (m *imageMode) columns() []*column                      { return nil }
func (m *imageMode) findsRows() bool                         { return false }
func (m *imageMode) index(context.Context, *fileBuild) error { return nil }
func (m *imageMode) ext() string                             { return m.extension }
func (m *imageMode) size() int64                             { return m.encSize }
func (m *imageMode) fileKey(*Version) string                 { return "" }

// sampleKey names the encoding too: the same pixels encoded otherwise are
// other bytes.
func (m *imageMode) sampleKey(_ *Version, row int64) (string, string) {
	return m.data.phys, m.unit(row)
}

func (m *imageMode) unit(row int64) string {
	return rowUnit(row) + "/" + m.format + "/" + m.image.String()
}

// smallImage is the encoded size up to which a sample is not kept in the
// rendered-image cache: the kernel reads it in one request, and then keeps
// it in its page cache.
const smallImage = 64 << 10

func (m *imageMode) content(ctx context.Context, sh *Shard, sg *segment, li int) ([]byte, error) {
	s, im, row := sh.v.s, m.image, sg.fs.row(li)
	var bad error
	render := func(fctx context.Context) ([]byte, error) {
		raw, err := m.fetch(fctx, sh, sg, li)
		if err != nil {
			return nil, sh.readErr(ctx, sg, err)
		}
		if int64(len(raw)) != im.Pixels() {
			bad = &SampleError{Table: s.location(), Version: sh.v.snap.Version, Path: sg.ref.Path, Row: row,
				Err: fmt.Errorf("column %s holds %d bytes, not %d for a %s image", m.data.name, len(raw), im.Pixels(), im)}
			return nil, bad
		}
		out := make([]byte, 0, m.encSize)
		if m.format == FormatPNM {
			return im.EncodePNM(out, raw), nil
		}
		return im.EncodePNG(out, raw), nil
	}
	var data []byte
	var err error
	if m.encSize <= smallImage {
		// Read whole by one FUSE request: caching would cost more than
		// encoding again.
		data, err = render(ctx)
	} else {
		key := sg.ref.CacheKey("image", m.data.phys, m.unit(row))
		data, err = s.rendered.Get(ctx, key, render)
	}
	if err != nil {
		if bad != nil {
			s.log.Error("sample fails with EIO: wrong pixel count", "err", bad)
		}
		return nil, err
	}
	return data, nil
}
