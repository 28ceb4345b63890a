package unity

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// fastRenewals shortens the renewal floor and back-off for a test.
func fastRenewals(t *testing.T, floor, cap time.Duration) {
	oldFloor, oldCap := MinRenewInterval, MaxRenewBackoff
	MinRenewInterval, MaxRenewBackoff = floor, cap
	t.Cleanup(func() { MinRenewInterval, MaxRenewBackoff = oldFloor, oldCap })
}

// TestVendedRenewsAhead: credentials of 600 ms are renewed before they
// expire, so Credentials never hands out expired ones.
func TestVendedRenewsAhead(t *testing.T) {
	fastRenewals(t, 50*time.Millisecond, time.Second)
	var n atomic.Int64
	v, err := NewVended(context.Background(), "uc://a.b.c", nil, func(ctx context.Context) (storage.Credentials, error) {
		n.Add(1)
		return storage.Credentials{AWS: &storage.AWSCredentials{AccessKeyID: "k"}, Expires: time.Now().Add(600 * time.Millisecond)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		c, err := v.Credentials(context.Background())
		if err != nil || !time.Now().Before(c.Expires) {
			t.Fatalf("%v, %v", c, err)
		}
	}
	if n.Load() < 4 {
		t.Fatalf("%d fetches in 2 s of 600 ms credentials", n.Load())
	}
}

// TestVendedRefusedThenBack: a refusal fails Credentials at once (not at
// expiry); a later grant brings them back.
func TestVendedRefusedThenBack(t *testing.T) {
	fastRenewals(t, 50*time.Millisecond, 200*time.Millisecond)
	var refuse atomic.Bool
	v, err := NewVended(context.Background(), "uc://a.b.c", nil, func(ctx context.Context) (storage.Credentials, error) {
		if refuse.Load() {
			return storage.Credentials{}, &APIError{Status: 403, Code: "PERMISSION_DENIED", Message: "no"}
		}
		return storage.Credentials{AWS: &storage.AWSCredentials{AccessKeyID: "k"}, Expires: time.Now().Add(time.Hour)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	refuse.Store(true)
	// Force an early renewal: pretend the credentials are old.
	v.mu.Lock()
	v.issued = time.Now().Add(-2 * time.Hour)
	v.cur.Expires = time.Now().Add(time.Hour)
	v.mu.Unlock()
	v.stop()
	<-v.done
	life, stop := context.WithCancel(context.Background())
	v.stop, v.done = stop, make(chan struct{})
	go v.run(life)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := v.Credentials(context.Background())
		if err != nil {
			if !strings.Contains(err.Error(), "PERMISSION_DENIED") || !IsDenied(errors.Unwrap(err)) {
				t.Fatalf("refusal: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("still no refusal")
		}
		time.Sleep(10 * time.Millisecond)
	}
	refuse.Store(false)
	for {
		if _, err := v.Credentials(context.Background()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not back after the grant")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestVendedExpiredTransient: an unreachable catalog past expiry fails
// Credentials with the cause, never with expired credentials.
func TestVendedExpiredTransient(t *testing.T) {
	fastRenewals(t, 50*time.Millisecond, time.Second)
	var fail atomic.Bool
	v, err := NewVended(context.Background(), "uc://a.b.c", nil, func(ctx context.Context) (storage.Credentials, error) {
		if fail.Load() {
			return storage.Credentials{}, errors.New("connection refused")
		}
		return storage.Credentials{AWS: &storage.AWSCredentials{AccessKeyID: "k"}, Expires: time.Now().Add(300 * time.Millisecond)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	fail.Store(true)
	time.Sleep(500 * time.Millisecond)
	_, err = v.Credentials(context.Background())
	if err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("got %v", err)
	}
}
