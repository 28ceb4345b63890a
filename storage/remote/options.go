package remote

import (
	"log/slog"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// Defaults of Tuning, for the three object-store backends alike.
const (
	DefaultMaxAttempts    = 5
	DefaultMaxBackoff     = 4 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultConnectTimeout = 5 * time.Second
	DefaultDownAfter      = 10 * time.Second
	DefaultProbeInterval  = 5 * time.Second
	DefaultMaxConcurrency = 64
	DefaultCoalesceGap    = 64 << 10
	DefaultMaxCoalesce    = 16 << 20
)

// LastCheckpointKey is the one key of a Delta table that is rewritten in
// place; by default it is never pinned (see Tuning.Mutable).
const LastCheckpointKey = "_delta_log/_last_checkpoint"

// Tuning is what the three object-store backends tune alike; each
// backend's Options embeds it. The zero value of every field means its
// default (SetDefaults).
type Tuning struct {
	// MaxAttempts bounds the attempts of one request, the first included
	// (default 5).
	MaxAttempts int
	// MaxBackoff caps the jittered exponential delay between attempts
	// (default 4 s; each backend documents its formula).
	MaxBackoff time.Duration
	// RequestTimeout bounds one attempt from sending the request to reading
	// the last byte of its body (default 30 s). A stalled attempt fails with
	// a timeout and is retried.
	RequestTimeout time.Duration
	// ConnectTimeout bounds connecting to the endpoint, TCP and TLS
	// (default 5 s): a host that drops packets fails an attempt in seconds,
	// not after RequestTimeout.
	ConnectTimeout time.Duration
	// DownAfter: when attempts have failed to reach the endpoint (at least
	// two in a row, with no answer since the first was sent) for this long,
	// the endpoint is declared down and every request fails at once until
	// it answers a probe (default 10 s; negative: never declared down). See
	// Health.
	DownAfter time.Duration
	// ProbeInterval is how often a down endpoint is probed (default 5 s);
	// a probe attempt is also bounded by it.
	ProbeInterval time.Duration
	// MaxConcurrency bounds the HTTP requests in flight (default 64). A
	// request holds its slot until its body is closed.
	MaxConcurrency int
	// CoalesceGap: ReadRanges reads two ranges with one GET when the gap
	// between them is at most this many bytes (default 64 KiB; negative:
	// only touching or overlapping ranges are merged).
	CoalesceGap int64
	// MaxCoalesce caps the size of one merged GET of ReadRanges (default
	// 16 MiB); a single range larger than this is still read with one GET.
	MaxCoalesce int64
	// Mutable reports keys whose content may legitimately change and that
	// are therefore never pinned (default: LastCheckpointKey only).
	Mutable func(key string) bool
	// Logger receives retries (the first of a minute at info level, the
	// others at debug), the endpoint going down (warning) and up (info),
	// and what each backend adds; default slog.Default(). Nothing logged
	// contains credentials.
	Logger *slog.Logger
}

// Command sets the fields the command line tunes (storage.RemoteOptions,
// which storage.S3Options, AzureOptions and GCSOptions embed: Timeout,
// MaxAttempts, DownAfter) where t leaves them zero.
func (t *Tuning) Command(c storage.RemoteOptions) {
	if t.RequestTimeout == 0 {
		t.RequestTimeout = c.Timeout
	}
	if t.MaxAttempts == 0 {
		t.MaxAttempts = c.MaxAttempts
	}
	if t.DownAfter == 0 {
		t.DownAfter = c.DownAfter
	}
}

// SetDefaults sets every zero field to its default (a negative
// CoalesceGap and a negative DownAfter stay: they mean "touching ranges
// only" and "never down").
func (t *Tuning) SetDefaults() {
	setPositive(&t.MaxAttempts, DefaultMaxAttempts)
	setPositive(&t.MaxConcurrency, DefaultMaxConcurrency)
	setPositive(&t.MaxBackoff, DefaultMaxBackoff)
	setPositive(&t.RequestTimeout, DefaultRequestTimeout)
	setPositive(&t.ConnectTimeout, DefaultConnectTimeout)
	setPositive(&t.ProbeInterval, DefaultProbeInterval)
	if t.DownAfter == 0 {
		t.DownAfter = DefaultDownAfter
	}
	if t.CoalesceGap == 0 {
		t.CoalesceGap = DefaultCoalesceGap
	}
	setPositive(&t.MaxCoalesce, DefaultMaxCoalesce)
	if t.Mutable == nil {
		t.Mutable = func(key string) bool { return key == LastCheckpointKey }
	}
	if t.Logger == nil {
		t.Logger = slog.Default()
	}
}

func setPositive[T int | int64 | time.Duration](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}
