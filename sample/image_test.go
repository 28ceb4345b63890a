package sample

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"testing"
)

func pixels(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7) + seed
	}
	return p
}

func TestEncodePNG(t *testing.T) {
	for _, im := range []Image{{28, 28, 1}, {1, 1, 1}, {3, 5, 3}, {4, 4, 4}, {2, 3, 2}, {300, 300, 1}, {200, 150, 3}} {
		t.Run(im.String(), func(t *testing.T) {
			pix := pixels(int(im.Pixels()), 3)
			enc := im.EncodePNG(nil, pix)
			if int64(len(enc)) != im.PNGSize() {
				t.Fatalf("encoded %d bytes, PNGSize says %d", len(enc), im.PNGSize())
			}
			img, err := png.Decode(bytes.NewReader(enc))
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != im.W || b.Dy() != im.H {
				t.Fatalf("decoded %v", b)
			}
			for y := 0; y < im.H; y++ {
				for x := 0; x < im.W; x++ {
					got := channels(img, x, y, im.C)
					want := pix[(y*im.W+x)*im.C : (y*im.W+x+1)*im.C]
					if !bytes.Equal(got, want) {
						t.Fatalf("pixel (%d,%d) = %v, want %v", x, y, got, want)
					}
				}
			}
		})
	}
}

func channels(img image.Image, x, y, c int) []byte {
	switch m := img.(type) {
	case *image.Gray:
		return []byte{m.GrayAt(x, y).Y}
	case *image.NRGBA:
		p := m.NRGBAAt(x, y)
		if c == 2 {
			return []byte{p.R, p.A}
		}
		return []byte{p.R, p.G, p.B, p.A}
	case *image.RGBA:
		p := m.RGBAAt(x, y)
		return []byte{p.R, p.G, p.B}
	}
	panic(fmt.Sprintf("decoded %T", img))
}

func TestEncodePNM(t *testing.T) {
	im := Image{2, 3, 1}
	enc := im.EncodePNM(nil, pixels(6, 0))
	if string(enc[:len("P5\n3 2\n255\n")]) != "P5\n3 2\n255\n" || int64(len(enc)) != im.PNMSize() {
		t.Fatalf("PGM %q (size %d, want %d)", enc, len(enc), im.PNMSize())
	}
	im = Image{2, 2, 3}
	if enc := im.EncodePNM(nil, pixels(12, 0)); string(enc[:2]) != "P6" || int64(len(enc)) != im.PNMSize() || im.pnmExt() != ".ppm" {
		t.Fatalf("PPM %q", enc)
	}
}

func TestParseImage(t *testing.T) {
	for in, want := range map[string]Image{"28x28": {28, 28, 1}, "32X32x3": {32, 32, 3}} {
		if got, err := ParseImage(in); err != nil || got != want {
			t.Errorf("ParseImage(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"28", "0x28", "28x28x5", "axb", "28x28x1x1"} {
		if _, err := ParseImage(bad); err == nil {
			t.Errorf("ParseImage(%q) accepted", bad)
		}
	}
}
