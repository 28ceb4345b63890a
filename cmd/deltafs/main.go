// Command deltafs mounts every version of a Delta Lake table as plain sample
// files, and offers the views a user needs around that: log, cat, import,
// warm, cache and gds. Each command lives in its own cmd_*.go file and
// registers itself with the root command; this file only wires the shared
// flags and turns an error into one line on stderr and a non-zero exit.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deltafs/deltafs/internal/oneline"
	"github.com/deltafs/deltafs/internal/secret"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/sharing"
	"github.com/deltafs/deltafs/table"
)

// global holds the flags every command shares.
var global struct {
	logLevel string
	storage  storage.Options
}

var rootCmd = &cobra.Command{
	Use:   "deltafs",
	Short: "Every version of a Delta Lake table as plain sample files",
	Long: `deltafs exposes every version of a Delta Lake table as plain files, so that any
training framework's loader reads training data straight from the table.

Exit status: 0 on success, 1 on any error (one line on stderr), 2 on bad usage.`,
	SilenceUsage:  true,
	SilenceErrors: true,
	PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
		var level slog.Level
		if err := level.UnmarshalText([]byte(global.logLevel)); err != nil {
			return usageError{fmt.Errorf("--log-level: %w", err)}
		}
		// Every log line one bounded line (oneline.ReplaceAttr) without
		// secrets, Go's log package's included (net/http logs there:
		// SetDefault routes it through the handler).
		slog.SetDefault(slog.New(secret.Handler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level, ReplaceAttr: oneline.ReplaceAttr}))))
		for _, c := range clouds {
			if c.retries < 0 || c.opts.Timeout < 0 {
				return usageError{fmt.Errorf("--%s-retries and --%s-timeout must not be negative", c.prefix, c.prefix)}
			}
			c.opts.SetRetries(c.retries)
		}
		if downAfter < 0 {
			return usageError{errors.New("--down-after must not be negative")}
		}
		if global.storage.Sharing.Timeout < 0 {
			return usageError{errors.New("--sharing-timeout must not be negative")}
		}
		d := downAfter
		if d == 0 {
			d = -1 // never
		}
		for _, c := range clouds {
			c.opts.DownAfter = d
		}
		return nil
	},
}

func init() {
	pf := rootCmd.PersistentFlags()
	pf.StringVar(&global.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	pf.StringVar(&global.storage.S3.Endpoint, "s3-endpoint", "", "S3 endpoint URL for S3-compatible stores (default: AWS_ENDPOINT_URL_S3, else AWS)")
	pf.StringVar(&global.storage.S3.Region, "s3-region", "", "S3 region (default: from the AWS configuration, else us-east-1)")
	pf.BoolVar(&global.storage.S3.PathStyle, "s3-path-style", false, "use path-style S3 URLs (MinIO, Ceph)")
	pf.BoolVar(&global.storage.S3.Anonymous, "s3-anonymous", false, "send unsigned S3 requests (public buckets)")
	for _, c := range clouds {
		pf.DurationVar(&c.opts.Timeout, c.prefix+"-timeout", remote.DefaultRequestTimeout, c.name+": time limit of one request attempt, from sending it to the last byte of the answer; a stalled attempt is retried")
		pf.IntVar(&c.retries, c.prefix+"-retries", remote.DefaultMaxAttempts-1, c.name+": retries of a failed request (throttling, server errors, resets, timeouts) before a read fails with EIO")
	}
	pf.DurationVar(&downAfter, "down-after", remote.DefaultDownAfter, "S3, Azure, GCS: once requests have failed to reach the endpoint for this long (refused, reset, no answer), fail them at once, without retries, until it answers again (probed every 5s); 0: never")
	// The S3-only name it had before Azure and GCS had a breaker.
	pf.DurationVar(&downAfter, "s3-down-after", remote.DefaultDownAfter, "the former name of --down-after")
	_ = pf.MarkDeprecated("s3-down-after", "use --down-after (it applies to S3, Azure and GCS)")
	pf.StringVar(&global.storage.Catalog.Endpoint, "uc-endpoint", "", "Unity Catalog server for uc:// tables (default: UC_ENDPOINT, DATABRICKS_HOST, else ~/.databrickscfg)")
	pf.StringVar(&global.storage.Catalog.Token, "uc-token", "", "Unity Catalog token (default: UC_TOKEN, DATABRICKS_TOKEN, else ~/.databrickscfg; prefer those: a flag shows in ps)")
	pf.StringVar(&global.storage.Catalog.Profile, "uc-profile", "", "profile of ~/.databrickscfg for uc:// tables (default: DATABRICKS_CONFIG_PROFILE, else DEFAULT)")
	pf.StringVar(&global.storage.Azure.Endpoint, "azure-endpoint", "", "Azure Blob service URL of the account, for emulators and sovereign clouds (default: BlobEndpoint of AZURE_STORAGE_CONNECTION_STRING, else from the location)")
	pf.BoolVar(&global.storage.Azure.Anonymous, "azure-anonymous", false, "Azure: send requests without credentials (public containers)")
	pf.StringVar(&global.storage.GCS.Endpoint, "gcs-endpoint", "", "GCS endpoint URL (fake-gcs-server, private endpoints); requests stay authenticated (default: STORAGE_EMULATOR_HOST without authentication, else Google)")
	pf.BoolVar(&global.storage.GCS.Anonymous, "gcs-anonymous", false, "send unauthenticated GCS requests (public buckets)")
	pf.DurationVar(&global.storage.Sharing.Timeout, "sharing-timeout", sharing.DefaultTimeout, "Delta Sharing: longest pause of the sharing server or a pre-signed URL's file server (until an answer's headers, then between two parts of it); a query's answer must arrive whole within ten times it, a data file's read within it")
	rootCmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{err} })
}

// clouds are the object stores' shared flags: --<prefix>-timeout and
// --<prefix>-retries (the options' MaxAttempts less one, converted by
// RemoteOptions.SetRetries), and --down-after for all three.
var clouds = []*struct {
	prefix, name string // of the flags, in their help
	opts         *storage.RemoteOptions
	retries      int
}{
	{prefix: "s3", name: "S3", opts: &global.storage.S3.RemoteOptions},
	{prefix: "azure", name: "Azure", opts: &global.storage.Azure.RemoteOptions},
	{prefix: "gcs", name: "GCS", opts: &global.storage.GCS.RemoteOptions},
}

// downAfter is --down-after, and its deprecated alias --s3-down-after (0,
// never, is DownAfter -1 for each cloud).
var downAfter time.Duration

// exitLine is the line a command ends with. An endpoint that went down
// is named without its "; retrying every 5s": a mount's reads retry it, a
// command that has ended does not (the stores copy the *remote.Unreachable
// message into their errors' reasons, once).
func exitLine(err error) string {
	line := err.Error()
	var ue *remote.Unreachable
	if errors.As(err, &ue) {
		line = strings.Replace(line, ue.Error(), ue.Ended(), 1)
	}
	return line
}

// usageError marks errors in how the command was called (exit status 2).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// positional checks a command's arguments: exactly the ones named, else a
// usage error such as "mount: want TABLE MOUNTPOINT, got 1 arguments".
func positional(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageError{fmt.Errorf("%s: want %s, got %d arguments", cmd.Name(), strings.Join(names, " "), len(args))}
		}
		return nil
	}
}

// openTable opens the Delta table at a location (path or URL) with the
// global storage flags, as far as its log (cat, log); the caller closes it.
func openTable(ctx context.Context, location string) (*table.Table, error) {
	return table.Open(ctx, table.Options{Location: location, Storage: global.storage})
}

func main() {
	keepStderr() // see signals.go
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := handleSignals(cancel) // see signals.go
	err := rootCmd.ExecuteContext(ctx)
	stop()
	if err != nil {
		if ierr := interruption(ctx); ierr != nil && errors.Is(err, context.Canceled) {
			err = ierr // "interrupted by SIGTERM", not where the context was seen
		}
		fmt.Fprintf(os.Stderr, "deltafs: %s\n", oneline.Of(secret.Redact(exitLine(err))))
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
