package remote

import (
	"log/slog"
	"time"
)

// Defaults of the backends' Options (each backend exports them under its
// own name too).
const (
	DefaultMaxAttempts    = 5
	DefaultMaxBackoff     = 4 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultConnectTimeout = 5 * time.Second
	DefaultMaxConcurrency = 64
	DefaultCoalesceGap    = 64 << 10
	DefaultMaxCoalesce    = 16 << 20
)

// LastCheckpointKey is the one key of a Delta table that is rewritten in
// place; by default it is never pinned (see the backends' Options.Mutable).
const LastCheckpointKey = "_delta_log/_last_checkpoint"

// Tuning points at the fields of a backend's Options that share their
// defaults; SetDefaults fills the zero ones.
type Tuning struct {
	MaxAttempts, MaxConcurrency                *int
	MaxBackoff, RequestTimeout, ConnectTimeout *time.Duration
	CoalesceGap, MaxCoalesce                   *int64
	Mutable                                    *func(key string) bool
	Logger                                     **slog.Logger
}

// SetDefaults sets every zero field to its default (a negative
// CoalesceGap stays: only touching ranges are merged); Mutable defaults
// to LastCheckpointKey only, Logger to slog.Default().
func (t Tuning) SetDefaults() {
	setPositive(t.MaxAttempts, DefaultMaxAttempts)
	setPositive(t.MaxConcurrency, DefaultMaxConcurrency)
	setPositive(t.MaxBackoff, DefaultMaxBackoff)
	setPositive(t.RequestTimeout, DefaultRequestTimeout)
	setPositive(t.ConnectTimeout, DefaultConnectTimeout)
	if *t.CoalesceGap == 0 {
		*t.CoalesceGap = DefaultCoalesceGap
	}
	setPositive(t.MaxCoalesce, DefaultMaxCoalesce)
	if *t.Mutable == nil {
		*t.Mutable = func(key string) bool { return key == LastCheckpointKey }
	}
	if *t.Logger == nil {
		*t.Logger = slog.Default()
	}
}

func setPositive[T int | int64 | time.Duration](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}
