package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/internal/testkit"
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
	rootCmd.InitDefaultCompletionCmd()
	walk(rootCmd)
	if n < 12 {
		t.Fatalf("walked %d commands, want every one (mount, unmount, log, cat, import, warm, cache, gds, version, ...)", n)
	}
}

// TestManPages: `deltafs man DIR` (what `make install` runs) writes one
// man page per command, generated from its definition: every command a
// user can run has deltafs-<path>.1 (deltafs.1 for the root) that names
// it and carries its flags; the hidden man command itself has none.
func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	if _, stderr, code := testkit.RunMain(t, nil, "man", dir); code != 0 {
		t.Fatalf("deltafs man %s: exit %d\n%s", dir, code, stderr)
	}
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		page := filepath.Join(dir, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		b, err := os.ReadFile(page)
		switch {
		case !c.IsAvailableCommand() && c != rootCmd:
			if err == nil {
				t.Errorf("%s: a man page for a hidden command", page)
			}
			return
		case err != nil:
			t.Errorf("%s: no man page: %v", c.CommandPath(), err)
			return
		}
		n++
		text := string(b)
		if !strings.HasPrefix(text, ".nh\n.TH \"DELTAFS\" \"1\"") || !strings.Contains(text, "\n"+strings.ReplaceAll(c.CommandPath(), " ", "-")+" - ") {
			t.Errorf("%s does not start with .TH \"DELTAFS\" \"1\" or name %q:\n%.300s", page, c.CommandPath(), text)
		}
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !strings.Contains(text, `\fB--`+f.Name+`\fP`) {
				t.Errorf("%s lacks --%s", page, f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	rootCmd.InitDefaultCompletionCmd() // as Execute does: completion has pages too
	walk(rootCmd)
	if b, _ := os.ReadFile(filepath.Join(dir, "deltafs-mount.1")); !strings.Contains(string(b), "at/<time>") || !strings.Contains(string(b), "<id><ext>") {
		t.Errorf("deltafs-mount.1 lost the placeholders of the tree (at/<time>, <id><ext>): read as HTML")
	}
	ents, _ := os.ReadDir(dir)
	if n < 12 || len(ents) != n {
		t.Errorf("%d pages for %d commands, want one each and at least 12", len(ents), n)
	}
}
