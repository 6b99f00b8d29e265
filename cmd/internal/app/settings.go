package app

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/guarded-exchange/guarded-exchange/cli"
)

// EnvKind is how the value of an environment variable is read. Only the
// kinds with a fixed set of values or a fixed form are checked at start
// (CheckEnv); the others are checked where they are used.
type EnvKind int

// The kinds of EnvVar.
const (
	// EnvText is a name, a path, a URL or a list, checked where it is used.
	EnvText EnvKind = iota
	// EnvBool is true/false/1/0/yes/no/on/off, in any case (ParseEnvBool).
	EnvBool
	// EnvLogLevel is debug, info, warn or error, in any case.
	EnvLogLevel
	// EnvLogFormat is json or text, in any case.
	EnvLogFormat
	// EnvDuration is a Go duration such as 30s or 2m.
	EnvDuration
)

// EnvVar is one environment variable the program reads.
type EnvVar struct {
	// Name is the variable, GX_....
	Name string
	// Kind is how its value is read.
	Kind EnvKind
	// Default is what applies when it is not set, as a person reads it.
	Default string
	// Meaning says in a few words what it sets.
	Meaning string
}

// EnvVars is every GX_ environment variable the program reads, in one
// place: an unknown GX_ variable is named in a warning at start (a typo
// guard), and the README's reference table is checked against this list.
// A new variable is added here, with its default.
var EnvVars = []EnvVar{
	{"GX_HOME", EnvText, "$XDG_DATA_HOME/guarded-exchange", "the data directory (--home)"},
	{"GX_MASTER_KEY_FILE", EnvText, "$XDG_CONFIG_HOME/guarded-exchange/master.key", "the master key file, outside the home (--master-key-file)"},
	{"GX_USER", EnvText, "local", "the user this process acts for (--user)"},
	{"GX_VENUE", EnvText, "paper", "paper, bybit-demo, bybit-testnet or bybit-live (--venue)"},
	{"GX_ENV_FILE", EnvText, "(none)", "a dotenv file to load (--env-file)"},
	{"GX_LOG_LEVEL", EnvLogLevel, "info", "debug, info, warn or error: the least important log line written"},
	{"GX_LOG_FORMAT", EnvLogFormat, "json", "json or text: how log lines on stderr are written (--log-format)"},
	{"GX_CONFIRM_CLI_ENABLED", EnvBool, "false", "serve lets the CLI (confirm approve/reject) decide confirmations"},
	{"GX_CONTROL_SOCKET", EnvText, "<home>/run/control.sock", "the control socket's path (absolute)"},
	{"GX_APPROVER_UIDS", EnvText, "(none)", "other uids that may decide confirmations over the control socket, comma-separated"},
	{"GX_DENY_TOOLS", EnvText, "(none)", "tools withheld from every profile, comma-separated (adds to --deny-tool)"},
	{"GX_HTTP_ALLOWED_HOSTS", EnvText, "the --listen host, localhost and 127.0.0.1", "Host headers remote mode accepts, comma-separated"},
	{"GX_HTTP_ALLOWED_ORIGINS", EnvText, "(none)", "browser Origins remote mode accepts, comma-separated"},
	{"GX_LIVE_ACK", EnvText, "(none)", "must be live for --venue bybit-live"},
	{"GX_BYBIT_BASE_URL", EnvText, "the venue's own", "a loopback REST URL for tests (needs GX_TEST_ALLOW_LOOPBACK_BYBIT_URL)"},
	{"GX_BYBIT_WS_PRIVATE_URL", EnvText, "the venue's own", "a loopback private-stream URL for tests (needs GX_TEST_ALLOW_LOOPBACK_BYBIT_URL)"},
	{"GX_TEST_ALLOW_LOOPBACK_BYBIT_URL", EnvBool, "false", "allows the two loopback URL overrides above"},
	{"GX_PAPER_SEED", EnvText, "1", "the seed of the paper venue's prices (an integer)"},
	{"GX_DISK_RESERVE_BYTES", EnvText, "268435456", "free bytes the journal's disk keeps; below it every user is REDUCING"},
	{"GX_DEMO_KEEP", EnvBool, "false", "demo keeps its temporary home"},
	{"GX_AGENT_API_KEY", EnvText, "(none)", "the API key agent and eval send to an OpenAI-compatible server (--provider openai-compatible)"},
	{"GX_TOKEN", EnvText, "(none; the server does not read it)", "the bearer token agent --mcp-url sends, and that the remote snippets of client-config have an MCP client read"},
}

// envVar is the entry of EnvVars named name.
func envVar(name string) (EnvVar, bool) {
	i := slices.IndexFunc(EnvVars, func(v EnvVar) bool { return v.Name == name })
	if i < 0 {
		return EnvVar{}, false
	}
	return EnvVars[i], true
}

// boolWords are the accepted spellings of a boolean setting, lower case.
var boolWords = map[string]bool{"true": true, "1": true, "yes": true, "on": true, "false": false, "0": false, "no": false, "off": false}

// ParseEnvBool reads a boolean setting: true/false/1/0/yes/no/on/off in
// any case (surrounding spaces ignored); "" is false. Anything else is an
// error naming the variable, never repeating the value.
func ParseEnvBool(name, value string) (bool, error) {
	v := strings.ToLower(strings.TrimSpace(value))
	if v == "" {
		return false, nil
	}
	b, ok := boolWords[v]
	if !ok {
		return false, fmt.Errorf("%s must be one of true, false, 1, 0, yes, no, on, off (any case)", name)
	}
	return b, nil
}

// envBool is a boolean setting read with getenv; a value CheckEnv would
// refuse reads as false (fail closed: a switch that is not clearly on is
// off).
func envBool(getenv func(string) string, name string) bool {
	b, err := ParseEnvBool(name, getenv(name))
	return err == nil && b
}

// ParseLogLevel reads a log level: debug, info, warn or error in any case;
// "" is info. name is what an error names (the variable or the flag).
func ParseLogLevel(name, value string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%s must be one of debug, info, warn, error (any case)", name)
}

// ParseLogFormat reads a log format: json or text in any case; "" is
// json.
func ParseLogFormat(name, value string) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(value)); v {
	case "":
		return "json", nil
	case "json", "text":
		return v, nil
	}
	return "", fmt.Errorf("%s must be json or text (any case)", name)
}

// ParseEnvDuration reads a duration setting: a Go duration such as 30s,
// 2m or 1h30m, not negative.
func ParseEnvDuration(name, value string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(value))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s must be a duration such as 30s, 2m or 1h30m", name)
	}
	return d, nil
}

// checkEnvValue checks one set variable of vars by its kind.
func checkEnvValue(v EnvVar, value string) error {
	var err error
	switch v.Kind {
	case EnvBool:
		_, err = ParseEnvBool(v.Name, value)
	case EnvLogLevel:
		_, err = ParseLogLevel(v.Name, value)
	case EnvLogFormat:
		_, err = ParseLogFormat(v.Name, value)
	case EnvDuration:
		if value != "" {
			_, err = ParseEnvDuration(v.Name, value)
		}
	}
	return err
}

// CheckEnv checks the environment (KEY=VALUE entries, as os.Environ) against
// vars: a known variable whose value its kind refuses is an error naming
// it (the first, in the order of vars); the GX_ variables that are not in
// vars come back, sorted, for a warning.
func CheckEnv(vars []EnvVar, environ []string) (unknown []string, err error) {
	set := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GX_") {
			set[k] = v
		}
	}
	for _, v := range vars {
		if value, ok := set[v.Name]; ok {
			if err := checkEnvValue(v, value); err != nil {
				return nil, err
			}
			delete(set, v.Name)
		}
	}
	for k := range set {
		unknown = append(unknown, k)
	}
	slices.Sort(unknown)
	return unknown, nil
}

// closestEnvVar is the known variable nearest to name by edit distance,
// when it is near enough to be the typo ("" otherwise).
func closestEnvVar(name string) string {
	best, bestD := "", 4
	for _, v := range EnvVars {
		if d := editDistance(name, v.Name); d < bestD {
			best, bestD = v.Name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// logsActivity are the commands whose log is the activity log, at info
// level unless GX_LOG_LEVEL says otherwise: the servers. Every other
// command answers on stdout, and its log shows only what went wrong
// (warn), so a run that goes well prints nothing on stderr.
var logsActivity = []string{"serve", "sim", "demo"}

// Configure implements cli.Configurer: once the flags are parsed and
// before the command runs, it checks the settings (a value a variable's
// kind refuses stops the command: exit 2 naming the variable) and, when
// LogOutput is set, builds the logger from GX_LOG_LEVEL and --log-format.
// Each unknown GX_ variable is named in a warning.
func (r *Runtime) Configure(command string, g *cli.Globals, _ cli.IO) error {
	unknown, err := CheckEnv(EnvVars, r.environ())
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	format, err := ParseLogFormat("--log-format (GX_LOG_FORMAT)", g.LogFormat)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	if r.LogOutput != nil {
		level := slog.LevelWarn
		if name, _, _ := strings.Cut(command, " "); slices.Contains(logsActivity, name) {
			level = slog.LevelInfo
		}
		if v := r.getenv("GX_LOG_LEVEL"); strings.TrimSpace(v) != "" {
			level, _ = ParseLogLevel("GX_LOG_LEVEL", v) // checked by CheckEnv
		}
		opts := &slog.HandlerOptions{Level: level}
		if format == "text" {
			r.Logger = slog.New(slog.NewTextHandler(r.LogOutput, opts))
		} else {
			r.Logger = slog.New(slog.NewJSONHandler(r.LogOutput, opts))
		}
	}
	for _, name := range unknown {
		attrs := []any{"name", name}
		if near := closestEnvVar(name); near != "" {
			attrs = append(attrs, "did_you_mean", near)
		}
		r.logger().Warn("unknown GX_ environment variable; it is ignored (README lists the variables)", attrs...)
	}
	return nil
}
