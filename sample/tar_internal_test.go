package sample

import (
	"strings"
	"testing"
	"time"
)

// TestTarHeaderLen: the header length the layout predicts is the length
// archive/tar writes, for every name length around USTAR's 100-byte limit
// and the PAX record's digit boundaries, ASCII or not.
func TestTarHeaderLen(t *testing.T) {
	tr := &Tar{mtime: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	for _, unit := range []string{"k", "é", "%2E"} {
		for n := 1; n <= 1200; n++ {
			key := strings.Repeat(unit, n)
			if len(key) > 1200 {
				break
			}
			for _, ext := range []string{".png", ".cls", ".json", ""} {
				name := key + ext
				hdr, err := tr.header([]byte(name), 12345)
				if err != nil {
					t.Fatalf("%d-byte name: %v", len(name), err)
				}
				if got := headerLen(len(name), []byte(key)); got != int64(len(hdr)) {
					t.Fatalf("%d-byte name of %q: predicted %d header bytes, archive/tar wrote %d", len(name), unit, got, len(hdr))
				}
			}
		}
	}
}
