package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeBlock is one fenced sh block of README.md that TestReadmeBlocks
// runs: every block of the Quick start, and every block whose opening
// fence follows a `<!-- test:run -->` line.
type readmeBlock struct {
	heading string
	line    int // of the opening fence
	lines   []string
}

// readmeRunMarker marks the next fenced sh block for TestReadmeBlocks.
const readmeRunMarker = "<!-- test:run -->"

func readmeBlocks(readme string) []readmeBlock {
	var blocks []readmeBlock
	heading, marked := "", false
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "## "):
			heading, marked = strings.TrimPrefix(line, "## "), false
		case strings.TrimSpace(line) == readmeRunMarker:
			marked = true
		case strings.HasPrefix(line, "```"):
			run := marked || (heading == "Quick start" && strings.TrimPrefix(line, "```") == "sh")
			marked = false
			b := readmeBlock{heading: heading, line: i + 1}
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
				b.lines = append(b.lines, lines[i])
			}
			if run {
				blocks = append(blocks, b)
			}
		case strings.TrimSpace(line) != "":
			marked = false
		}
	}
	return blocks
}

// readmeSkip says why a README command line is not run, or "" to run it.
// The rule (README "Quick start"): a line that needs the network or a tool
// the test machine may not have, or that would not end on its own.
func readmeSkip(line string) string {
	words := strings.Fields(line)
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		words = words[1:] // VAR=value prefixes
	}
	if len(words) == 0 {
		return ""
	}
	switch filepath.Base(words[0]) {
	case "go":
		if len(words) > 1 && words[1] == "install" {
			return "go install needs the network; the built binary is on PATH instead"
		}
	case "make":
		return "make builds or runs the test suite; the test built the binary already"
	case "npx", "npm", "claude", "curl":
		return words[0] + " needs the network or a client the test machine may not have"
	case "guarded-exchange":
		for _, w := range words[1:] {
			if w == "serve" {
				return "serve is a long-running server"
			}
		}
	}
	return ""
}

// TestReadmeBlocks runs the README's Quick start, and every block marked
// with readmeRunMarker, in order, with sh -e, on one fresh home (a new
// HOME, so the default home and master key) with the built binary on PATH
// as guarded-exchange (and as bin/guarded-exchange in the working
// directory). Lines are skipped only by readmeSkip, and each skip is
// logged.
func TestReadmeBlocks(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(string(readme))
	if len(blocks) == 0 || blocks[0].heading != "Quick start" {
		t.Fatalf("README.md has no sh block in its Quick start")
	}
	home := t.TempDir()
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin", "guarded-exchange")); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "TMPDIR=" + t.TempDir(), "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")}
	ran := 0
	for _, b := range blocks {
		// Join continuation lines, then drop the skipped ones.
		var script []string
		for i := 0; i < len(b.lines); i++ {
			line := b.lines[i]
			for strings.HasSuffix(line, `\`) && i+1 < len(b.lines) {
				i++
				line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(b.lines[i])
			}
			if why := readmeSkip(line); why != "" {
				t.Logf("README.md:%d (%s): skipped %q: %s", b.line, b.heading, line, why)
				continue
			}
			script = append(script, line)
			ran++
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-e", "-c", strings.Join(script, "\n"))
		cmd.Dir, cmd.Env = work, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("README.md:%d (%s): %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", b.line, b.heading, err, strings.Join(script, "\n"), stdout.String(), stderr.String())
		}
	}
	if ran == 0 {
		t.Fatal("every README command was skipped")
	}
}

// The skip rule and the marker, on a README of a few lines.
func TestReadmeBlocksRules(t *testing.T) {
	t.Parallel()
	readme := "## Quick start\n\n```sh\nguarded-exchange init\n```\n\n```json\n{}\n```\n\n## First trade\n\n<!-- test:run -->\n```sh\nguarded-exchange doctor\n```\n\n```sh\nguarded-exchange never-run\n```\n"
	blocks := readmeBlocks(readme)
	if len(blocks) != 2 || blocks[0].lines[0] != "guarded-exchange init" || blocks[1].lines[0] != "guarded-exchange doctor" {
		t.Fatalf("blocks: %+v", blocks)
	}
	for line, skipped := range map[string]bool{
		"go install github.com/x/y@latest":                                       true,
		"make demo":                                                              true,
		"npx @modelcontextprotocol/inspector --cli x":                            true,
		"GX_CONFIRM_CLI_ENABLED=true guarded-exchange serve":                     true,
		"bin/guarded-exchange serve --transport http":                            true,
		"guarded-exchange init":                                                  false,
		"guarded-exchange admin policy set-ceiling --user local --profile trade": false,
	} {
		if got := readmeSkip(line) != ""; got != skipped {
			t.Errorf("readmeSkip(%q) skipped=%v, want %v", line, got, skipped)
		}
	}
}
