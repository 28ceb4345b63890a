package s3store_test

import (
	"math/rand"
	"testing"

	"github.com/deltafs/deltafs/storage/s3store"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
)

// BenchmarkReadAt measures one ranged GET of 64 KiB at a random offset of
// a 16 MiB object (sequential requests, pinned key), and HEAD, on gofakes3
// in process and on moto_server.
//
//	go test -run '^$' -bench . -benchtime 200x ./storage/s3store
func BenchmarkReadAt(b *testing.B) {
	servers := []struct {
		name  string
		start func(testing.TB) string
	}{
		{"gofakes3", s3test.StartGofakes3},
		{"moto", s3test.StartMoto},
	}
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			ep := srv.start(b)
			bucket := newBucket(b, ep)
			const size = 16 << 20
			s3test.Put(b, ep, bucket, "t/f", randBytes(1, size))
			st := open(b, "s3://"+bucket+"/t", testOptions(ep))
			ctx := ctxT(b)
			if _, err := st.Stat(ctx, "f"); err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewSource(1))
			b.Run("GET64KiB", func(b *testing.B) {
				p := make([]byte, 64<<10)
				b.SetBytes(int64(len(p)))
				for i := 0; i < b.N; i++ {
					if _, err := st.ReadAt(ctx, "f", p, r.Int63n(size-int64(len(p)))); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("ReadRanges16x4KiB", func(b *testing.B) {
				rs := make([]s3store.Range, 16)
				for i := 0; i < b.N; i++ {
					for j := range rs {
						rs[j] = s3store.Range{Off: r.Int63n(size - 4096), Len: 4096}
					}
					if _, err := st.ReadRanges(ctx, "f", rs); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("HEAD", func(b *testing.B) {
				other := open(b, "s3://"+bucket+"/t", testOptions(ep))
				for i := 0; i < b.N; i++ {
					if _, err := other.Stat(ctx, "missing"); err == nil {
						b.Fatal("missing key found")
					}
				}
			})
		})
	}
}
