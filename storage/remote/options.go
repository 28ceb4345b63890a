package remote

import "time"

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
