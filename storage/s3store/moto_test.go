package s3store_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/s3store"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// TestMoto runs the conformance suite against moto_server, which accepts
// any credentials (see TestMotoAuth for authentication).
func TestMoto(t *testing.T) {
	if testing.Short() {
		t.Skip("short: moto takes seconds to start")
	}
	t.Parallel()
	ep := s3test.StartMoto(t)
	bucket := newBucket(t, ep)

	t.Run("Conformance", func(t *testing.T) {
		n := 0
		storagetest.Run(t, func(t *testing.T) storage.Storage {
			n++
			return open(t, fmt.Sprintf("s3://%s/conformance/t%d", bucket, n), testOptions(ep))
		})
	})
	// moto honours If-Match, so a change behind a store's back is a 412.
	t.Run("PinningIfMatch", func(t *testing.T) {
		s3test.Put(t, ep, bucket, "pin/a.parquet", randBytes(1, 5000))
		st := open(t, "s3://"+bucket+"/pin", testOptions(ep))
		if _, err := st.ReadAt(ctxT(t), "a.parquet", make([]byte, 10), 0); err != nil {
			t.Fatal(err)
		}
		s3test.Put(t, ep, bucket, "pin/a.parquet", randBytes(2, 5000))
		_, err := st.ReadAt(ctxT(t), "a.parquet", make([]byte, 10), 0)
		if !errors.Is(err, storage.ErrChanged) || !strings.Contains(err.Error(), "If-Match") {
			t.Fatalf("ReadAt after a change = %v; want ErrChanged from If-Match", err)
		}
		t.Logf("%v", err)
	})
	t.Run("MissingBucket", func(t *testing.T) {
		st := open(t, "s3://no-such-bucket-deltafs/t", testOptions(ep))
		_, err := st.List(ctxT(t), "_delta_log/", "")
		if err == nil || !strings.Contains(err.Error(), "bucket no-such-bucket-deltafs does not exist") || !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("List on a missing bucket = %v", err)
		}
		t.Logf("%v", err)
		if s := st.Stats(); s.Retries != 0 {
			t.Errorf("%d retries", s.Retries)
		}
	})
}

// TestMotoAuth checks authentication failures against moto with SigV4 and
// IAM checks on (s3test.StartMotoAuth): a wrong secret, an unknown key and
// unsigned requests to a private bucket fail at once with a message that
// says so, and neither errors nor logs contain the secret.
func TestMotoAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("short: moto takes seconds to start")
	}
	t.Parallel()
	ep, ak, sk := s3test.StartMotoAuth(t)
	bucket := newBucket(t, ep)
	opts := func() s3store.Options {
		o := testOptions(ep)
		o.Credentials = credentials.NewStaticCredentialsProvider(ak, sk, "")
		return o
	}
	// Plain keys only: moto's signature check fails on percent-encoded
	// characters (see StartMotoAuth), so no List with a '/' prefix here.
	s3test.Put(t, ep, bucket, "private/_delta_log/00000000000000000000.json", []byte(`{"commitInfo":{}}`+"\n"))
	loc := "s3://" + bucket + "/private"
	key := "_delta_log/00000000000000000000.json"

	t.Run("GoodCredentials", func(t *testing.T) {
		st := open(t, loc, opts())
		b, err := storage.ReadAll(ctxT(t), st, key)
		if err != nil || !bytes.Contains(b, []byte("commitInfo")) {
			t.Fatalf("ReadAll = %q, %v", b, err)
		}
		if _, err := st.Stat(ctxT(t), "_delta_log/00000000000000000001.json"); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("Stat of a missing key = %v", err)
		}
	})

	// authFails checks that Stat and ReadAt fail at once (no retries) with
	// a permanent error whose message contains one of want, and that no
	// error or log record contains secret.
	authFails := func(t *testing.T, o s3store.Options, withPut bool, secret string, want ...string) {
		t.Helper()
		var logBuf bytes.Buffer
		o.Logger = slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		st := open(t, loc, o)
		ctx := ctxT(t)
		_, errStat := st.Stat(ctx, key)
		_, errRead := st.ReadAt(ctx, key, make([]byte, 10), 0)
		errs := []error{errStat, errRead}
		if withPut {
			errs = append(errs, st.Put(ctx, "_delta_log/00000000000000000001.json", []byte("{}"), true))
		}
		for i, err := range errs {
			if err == nil {
				t.Fatalf("call %d succeeded", i)
			}
			msg := err.Error()
			t.Logf("error %d: %s", i, msg)
			ok := false
			for _, w := range want {
				ok = ok || strings.Contains(msg, w)
			}
			if !ok {
				t.Errorf("error %q says none of %q", msg, want)
			}
			var se *s3store.Error
			if !errors.As(err, &se) || !se.Permanent {
				t.Errorf("error %q is not a permanent *s3store.Error", msg)
			}
			if errors.Is(err, storage.ErrNotExist) || errors.Is(err, storage.ErrExist) {
				t.Errorf("error %q wraps a not-exist/exist sentinel", msg)
			}
			if secret != "" && strings.Contains(msg, secret) {
				t.Errorf("error contains the secret: %q", msg)
			}
		}
		if s := st.Stats(); s.Retries != 0 || s.Requests() != int64(len(errs)) {
			t.Errorf("%d requests, %d retries; want %d requests and no retries of an authentication failure", s.Requests(), s.Retries, len(errs))
		}
		if secret != "" && strings.Contains(logBuf.String(), secret) {
			t.Errorf("log contains the secret:\n%s", logBuf.String())
		}
	}

	t.Run("WrongSecret", func(t *testing.T) {
		const secret = "wRoNg/SeCrEt/KeY/that-must-never-be-printed"
		o := opts()
		o.Credentials = credentials.NewStaticCredentialsProvider(ak, secret, "")
		// HEAD has no body: its 403 cannot say why.
		authFails(t, o, true, secret, "invalid credentials: the request signature does not match", "access denied (check credentials")
	})
	t.Run("UnknownKey", func(t *testing.T) {
		const secret = "another/secret/that-must-never-be-printed"
		o := opts()
		o.Credentials = credentials.NewStaticCredentialsProvider("AKIAUNKNOWNKEY000000", secret, "")
		authFails(t, o, true, secret, "invalid credentials: the server does not know the access key id", "access denied (check credentials")
	})
	t.Run("AnonymousPrivateBucket", func(t *testing.T) {
		o := opts()
		o.Credentials = nil
		o.S3Options.Anonymous = true
		// Not a put: moto answers an unsigned PUT (and LIST) with 500.
		authFails(t, o, false, "", "access denied (check credentials")
	})
}
