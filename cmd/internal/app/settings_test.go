package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/cli"
)

// configure runs Configure for command with the environment env and
// returns its error and what the logger wrote.
func configure(t *testing.T, command string, g cli.Globals, env ...string) (err error, logs string) {
	t.Helper()
	var out bytes.Buffer
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	r := &Runtime{LogOutput: &out, Getenv: func(k string) string { return m[k] }, Environ: func() []string { return env }}
	if err = r.Configure(command, &g, cli.IO{}); err == nil {
		r.logger().Info("probe")
	}
	return err, out.String()
}

// A boolean setting takes true/false/1/0/yes/no/on/off in any case;
// anything else refuses to start, naming the variable, not the value.
func TestBoolSettingWords(t *testing.T) {
	for word, want := range map[string]bool{"true": true, "TRUE": true, "1": true, "yes": true, "Yes": true, "on": true, "ON": true,
		"false": false, "False": false, "0": false, "no": false, "NO": false, "off": false, "Off": false, "": false} {
		got, err := ParseEnvBool("GX_CONFIRM_CLI_ENABLED", word)
		if err != nil || got != want {
			t.Errorf("%q: %v, %v", word, got, err)
		}
	}
	for _, bad := range []string{"maybe", "tru", "2", "enabled"} {
		err, _ := configure(t, "serve", cli.Globals{}, "GX_CONFIRM_CLI_ENABLED="+bad)
		want := "cannot start: GX_CONFIRM_CLI_ENABLED must be one of true, false, 1, 0, yes, no, on, off (any case)"
		if err == nil || err.Error() != want || cli.CodeOf(err) != cli.ExitCannot {
			t.Errorf("%q: %v (exit %d), want %q", bad, err, cli.CodeOf(err), want)
		}
	}
	// Every boolean of the list is checked, not only the first.
	if err, _ := configure(t, "demo", cli.Globals{}, "GX_DEMO_KEEP=sure"); err == nil || !strings.Contains(err.Error(), "GX_DEMO_KEEP must be") {
		t.Errorf("GX_DEMO_KEEP=sure: %v", err)
	}
	if !envBool(func(string) string { return "Yes" }, "GX_CONFIRM_CLI_ENABLED") || envBool(func(string) string { return "sure" }, "X") {
		t.Error("envBool does not read the words")
	}
}

// GX_LOG_LEVEL takes debug/info/warn/error in any case; anything else
// refuses to start naming it. The level applies: debug shows debug lines.
func TestLogLevelSetting(t *testing.T) {
	err, _ := configure(t, "serve", cli.Globals{}, "GX_LOG_LEVEL=verbose")
	if want := "cannot start: GX_LOG_LEVEL must be one of debug, info, warn, error (any case)"; err == nil || err.Error() != want {
		t.Fatalf("verbose: %v, want %q", err, want)
	}
	for level, want := range map[string]slog.Level{"DEBUG": slog.LevelDebug, "Info": slog.LevelInfo, "warn": slog.LevelWarn, "ERROR": slog.LevelError} {
		if got, err := ParseLogLevel("GX_LOG_LEVEL", level); err != nil || got != want {
			t.Errorf("%s: %v %v", level, got, err)
		}
	}
	// The default: info for serve (its activity log), warn for the
	// commands that answer on stdout.
	if _, logs := configure(t, "serve", cli.Globals{}); !strings.Contains(logs, `"msg":"probe"`) {
		t.Errorf("serve at the default level does not log info: %q", logs)
	}
	if _, logs := configure(t, "policy show", cli.Globals{}); logs != "" {
		t.Errorf("policy show at the default level logs info: %q", logs)
	}
	if _, logs := configure(t, "policy show", cli.Globals{}, "GX_LOG_LEVEL=info"); !strings.Contains(logs, `"msg":"probe"`) {
		t.Errorf("GX_LOG_LEVEL=info is not applied: %q", logs)
	}
}

// A duration setting is a Go duration, not negative; anything else is
// refused naming the variable.
func TestDurationSetting(t *testing.T) {
	v := EnvVar{Name: "GX_EXAMPLE_TIMEOUT", Kind: EnvDuration}
	for _, ok := range []string{"30s", "2m", "1h30m", "0s"} {
		if err := checkEnvValue(v, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"30", "-1s", "soon"} {
		err := checkEnvValue(v, bad)
		if want := "GX_EXAMPLE_TIMEOUT must be a duration such as 30s, 2m or 1h30m"; err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
	if _, err := CheckEnv([]EnvVar{v}, []string{"GX_EXAMPLE_TIMEOUT=30"}); err == nil {
		t.Error("CheckEnv let a bad duration through")
	}
}

// --log-format json|text (GX_LOG_FORMAT) picks slog's handler; anything
// else refuses to start.
func TestLogFormatSetting(t *testing.T) {
	_, logs := configure(t, "serve", cli.Globals{LogFormat: "text"})
	if !strings.Contains(logs, "level=INFO msg=probe") {
		t.Errorf("text: %q", logs)
	}
	_, logs = configure(t, "serve", cli.Globals{LogFormat: "JSON"})
	var m map[string]any
	if json.Unmarshal([]byte(logs), &m) != nil || m["msg"] != "probe" {
		t.Errorf("json: %q", logs)
	}
	err, _ := configure(t, "serve", cli.Globals{LogFormat: "xml"})
	if want := "cannot start: --log-format (GX_LOG_FORMAT) must be json or text (any case)"; err == nil || err.Error() != want {
		t.Errorf("xml: %v", err)
	}
	if err, _ := configure(t, "serve", cli.Globals{LogFormat: "json"}, "GX_LOG_FORMAT=yaml"); err == nil || !strings.Contains(err.Error(), "GX_LOG_FORMAT") {
		t.Errorf("GX_LOG_FORMAT=yaml: %v", err)
	}
}

// An unknown GX_ variable is named in a warning, with the known one it is
// probably a typo of; its value is not repeated. Other variables are not
// looked at.
func TestUnknownGXVariableWarned(t *testing.T) {
	err, logs := configure(t, "policy show", cli.Globals{}, "GX_CONFRIM_CLI_ENABLED=s3cretvalue", "GX_HOME=/x", "HOME=/y", "GXNOT=1")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if json.Unmarshal([]byte(logs), &m) != nil || m["level"] != "WARN" || m["name"] != "GX_CONFRIM_CLI_ENABLED" || m["did_you_mean"] != "GX_CONFIRM_CLI_ENABLED" {
		t.Fatalf("warning %q", logs)
	}
	if strings.Contains(logs, "s3cretvalue") || strings.Contains(logs, "GX_HOME") || strings.Contains(logs, "GXNOT") {
		t.Fatalf("the warning says too much: %q", logs)
	}
	if _, logs := configure(t, "policy show", cli.Globals{}, "GX_HOME=/x", "GX_LOG_LEVEL=warn"); logs != "" {
		t.Fatalf("known variables warned: %q", logs)
	}
}

// EnvVars is the one list of variables: every global flag's env binding
// and every GX_ name the program's sources mention is in it, once.
func TestEnvVarsListEveryVariable(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range EnvVars {
		if seen[v.Name] || !strings.HasPrefix(v.Name, "GX_") || v.Default == "" || v.Meaning == "" {
			t.Errorf("entry %+v: duplicate, not GX_, or without default or meaning", v)
		}
		seen[v.Name] = true
	}
	gt := reflect.TypeOf(cli.Globals{})
	for i := range gt.NumField() {
		if env := gt.Field(i).Tag.Get("env"); env != "" && !seen[env] {
			t.Errorf("global flag --%s reads %s, which EnvVars does not list", gt.Field(i).Tag.Get("name"), env)
		}
	}
	name := regexp.MustCompile(`\bGX_[A-Z0-9_]*[A-Z0-9]\b`)
	root := filepath.Join("..", "..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(b), -1) {
			if !seen[n] {
				t.Errorf("%s mentions %s, which EnvVars does not list", path, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
