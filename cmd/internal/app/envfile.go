package app

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// EnvFileFromArgs finds --env-file (or GX_ENV_FILE) before kong parses, so
// the file's variables can feed kong's env bindings. A .env in the working
// directory is never read implicitly (docs/commands.md "Global flags").
func EnvFileFromArgs(args []string, getenv func(string) string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--env-file="); ok {
			return v
		}
		if a == "--env-file" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return getenv("GX_ENV_FILE")
}

// LoadEnvFile sets the KEY=VALUE lines of path that are not already set in
// the environment. Blank lines and # comments are skipped; values may be
// single- or double-quoted. Errors name the line, never its value.
func LoadEnvFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("env file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return fmt.Errorf("env file %s: line %d is not KEY=VALUE", path, n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		if _, set := os.LookupEnv(k); !set {
			if err := os.Setenv(k, v); err != nil {
				return fmt.Errorf("env file %s: line %d: %w", path, n, err)
			}
		}
	}
	return sc.Err()
}
