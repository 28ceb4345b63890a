package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelpDefects walks every command's --help, as a user reads it, for the
// defects a first reading found: a flag whose placeholder is a phrase
// picked from its text (`--at deltafs log`: pflag takes the first
// back-quoted words as the placeholder), a default said twice ("(default:
// all) (default -1)"), two sentences run together or a paragraph line far
// wider than its neighbours (the unmount text).
func TestHelpDefects(t *testing.T) {
	placeholder := regexp.MustCompile(`^[A-Za-z0-9_|]*$`)
	twice := regexp.MustCompile(`default[: ].*\(default `)
	runTogether := regexp.MustCompile(`[a-z0-9)"]\.(--|[A-Z])`)
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		n++
		name := c.CommandPath()
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if ph, _ := pflag.UnquoteUsage(f); !placeholder.MatchString(ph) {
				t.Errorf("%s --%s: placeholder %q, want one word such as TIME", name, f.Name, ph)
			}
		})
		var b bytes.Buffer
		c.SetOut(&b)
		err := c.Help()
		c.SetOut(nil)
		if err != nil {
			t.Fatalf("%s --help: %v", name, err)
		}
		help := b.String()
		prose, _, _ := strings.Cut(help, "\nUsage:")
		for _, line := range strings.Split(help, "\n") {
			if twice.MatchString(line) {
				t.Errorf("%s --help says a default twice: %s", name, strings.TrimSpace(line))
			}
		}
		for _, line := range strings.Split(prose, "\n") {
			if m := runTogether.FindString(line); m != "" {
				t.Errorf("%s --help runs two sentences together (%q): %s", name, m, line)
			}
			if len(line) > 90 && !strings.HasPrefix(line, " ") {
				t.Errorf("%s --help: a paragraph line of %d columns (its neighbours wrap at 90): %s", name, len(line), line)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCmd)
	if n < 12 {
		t.Fatalf("walked %d commands, want every one (mount, unmount, log, cat, import, warm, cache, gds, version, ...)", n)
	}
}
