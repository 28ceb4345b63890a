package samplelist

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParse(t *testing.T) {
	got, err := Parse(strings.NewReader("# path\tsize\n0/a.png\t12\n\n1/b.png\t7\n#note\n"))
	if err != nil || !slices.Equal(got, []string{"0/a.png", "1/b.png"}) {
		t.Fatalf("Parse = %q, %v", got, err)
	}
	boom := errors.New("boom")
	if _, err := Parse(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Fatalf("a failing read: %v, want boom", err)
	}
}
