package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Exit codes of docs/commands.md "Exit codes".
const (
	ExitOK       = 0
	ExitRefused  = 1
	ExitCannot   = 2 // cannot start, bad installation, usage
	exitKongMisc = 80
)

// ExitError carries the process exit code for an error. kong uses its
// ExitCode method.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode implements kong's exit-code interface.
func (e *ExitError) ExitCode() int { return e.Code }

// CannotStart is the refusal to start of docs/commands.md "Exit codes": exit 2 with
// "guarded-exchange: cannot start: <reason>".
func CannotStart(format string, args ...any) error {
	return &ExitError{Code: ExitCannot, Err: fmt.Errorf("cannot start: "+format, args...)}
}

// Refused is a failed or refused action: exit 1.
func Refused(format string, args ...any) error {
	return &ExitError{Code: ExitRefused, Err: fmt.Errorf(format, args...)}
}

// CodeOf returns the exit code for err: ExitOK for nil, the ExitError's code,
// or ExitRefused.
func CodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitRefused
}

// Globals are the flags every command takes (docs/commands.md "Global flags"). Empty Home and
// MasterKeyFile mean the XDG defaults, resolved by the Runtime.
type Globals struct {
	Home          string `name:"home" env:"GX_HOME" help:"data directory (default $XDG_DATA_HOME/guarded-exchange)" placeholder:"DIR"`
	MasterKeyFile string `name:"master-key-file" env:"GX_MASTER_KEY_FILE" help:"256-bit master key file, outside --home (default $XDG_CONFIG_HOME/guarded-exchange/master.key)" placeholder:"FILE"`
	User          string `name:"user" env:"GX_USER" default:"local" help:"the user this process acts for"`
	Venue         string `name:"venue" env:"GX_VENUE" default:"paper" enum:"paper,bybit-demo,bybit-testnet,bybit-live" help:"paper (embedded simulator), bybit-demo, bybit-testnet or bybit-live"`
	EnvFile       string `name:"env-file" env:"GX_ENV_FILE" help:"explicit dotenv file to load; a .env in the working directory is never read" placeholder:"FILE"`
	LogFormat     string `name:"log-format" env:"GX_LOG_FORMAT" default:"json" help:"json or text: how log lines on stderr are written (GX_LOG_LEVEL sets the level)" placeholder:"json|text"`
}

// PolicyWarner is implemented by a Runtime that can tell when a policy
// lets no order through (a cap under every allowed symbol's smallest
// order). The commands that change a policy print its warnings on stderr;
// the change stands.
type PolicyWarner interface {
	PolicyWarnings(p messages.Policy) []string
}

// Configurer is implemented by a Runtime that sets itself up from the
// parsed global flags before any command runs: it checks the settings
// and builds its logger. command is the command's path as kong names it
// ("serve", "policy show <...>"). An error stops the command with its exit
// code.
type Configurer interface {
	Configure(command string, g *Globals, io IO) error
}

// IO is where a command writes. Out is stdout for the commands that print
// results; Serve never writes to it.
type IO struct {
	Out io.Writer
	Err io.Writer
	// In answers confirmation prompts; nil or EOF means no answer.
	In io.Reader
}

// ServeOptions are the flags of serve.
type ServeOptions struct {
	Transport string
	Listen    string
	// DenyTools are tools withheld from every profile (--deny-tool, with
	// GX_DENY_TOOLS added by the runtime).
	DenyTools []string
	// Cluster, when not nil, makes this server a member of a cluster
	// (--cluster…, docs/cluster.md "Running a member"); nil is local mode.
	Cluster *ClusterOptions
}

// ClusterOptions are serve's --cluster… flags, checked: every field is
// set and valid.
type ClusterOptions struct {
	// Name is the cluster's name (--cluster).
	Name string
	// Etcd lists etcd's client endpoints (--cluster-etcd).
	Etcd []string
	// Advertise is HOST:PORT the other members reach this one at
	// (--cluster-advertise).
	Advertise string
	// DataDir is the directory every member shares (--cluster-data).
	DataDir string
	// Shards is the shard count a new cluster is created with
	// (--cluster-shards); ShardsGiven says it was on the command line, so
	// that a member joining a cluster of another count refuses to start.
	Shards      int
	ShardsGiven bool
	// LockTTL is the shard locks' lease TTL (hidden --cluster-lock-ttl;
	// zero: the default).
	LockTTL time.Duration
}

// Bounds of --cluster-shards.
const (
	DefaultClusterShards = 16
	MaxClusterShards     = 1024
)

// SimOptions are the flags of sim.
type SimOptions struct {
	Listen string
	Seed   int64
}

// DumpOptions are the flags of journal dump.
type DumpOptions struct {
	Dir    string
	User   string
	Types  []string
	Since  time.Time
	Until  time.Time
	Format string
}

// Runtime does the work of each command. The composition root implements
// it; tests may too.
type Runtime interface {
	Init(ctx context.Context, g *Globals, io IO) error
	Serve(ctx context.Context, g *Globals, o ServeOptions, io IO) error
	Demo(ctx context.Context, g *Globals, io IO) error
	Sim(ctx context.Context, o SimOptions, io IO) error
	JournalDump(ctx context.Context, g *Globals, o DumpOptions, io IO) error
	JournalVerify(ctx context.Context, g *Globals, dir, expectHead string, io IO) error
	JournalHead(ctx context.Context, g *Globals, dir string, io IO) error
	// ClusterStatus prints a cluster's members, shards, owners, epochs and
	// users, read from etcd and the shared data directory; it needs no
	// server, home or master key.
	ClusterStatus(ctx context.Context, g *Globals, o ClusterStatusOptions, io IO) error
	Doctor(ctx context.Context, g *Globals, io IO) error
	// ClientConfig prints the configuration snippet of an MCP client for
	// this binary and home.
	ClientConfig(ctx context.Context, g *Globals, o ClientConfigOptions, io IO) error
	Version(io IO) error
	// Deliver sends one command to the actor that owns its state: over the
	// control socket when a server runs, else by hosting the same actors
	// in-process under the home lock until the change is durable. It
	// returns the typed answer.
	Deliver(ctx context.Context, g *Globals, cmd messages.Command) (any, error)
	// DialServer opens one connection to the running server's control
	// socket, which carries any number of commands in turn (`confirm
	// approve` reads the plan and decides it over one). With no server
	// running it refuses and sends nothing (an approval executes at once,
	// and only the running server sends).
	DialServer(ctx context.Context, g *Globals) (ServerConn, error)
}

// CLI is the command tree.
type CLI struct {
	Globals

	Init       InitCmd       `cmd:"" help:"Create the home, the journal, the master key and the local user. Safe to re-run."`
	Serve      ServeCmd      `cmd:"" help:"Run the MCP server (stdio, or HTTP with bearer tokens)."`
	Demo       DemoCmd       `cmd:"" help:"A scripted walkthrough on the paper venue, in a throw-away home."`
	Sim        SimCmd        `cmd:"" help:"Run the Bybit-compatible simulator alone and print its URLs as one JSON line."`
	Journal    JournalCmd    `cmd:"" help:"Read the journal: dump, verify, head. Works on a copy, with no server, lock or master key."`
	Cluster    ClusterCmd    `cmd:"" help:"A cluster of remote-mode members: status, read from etcd with no server needed."`
	Policy     PolicyCmd     `cmd:"" help:"Show or tighten your own policy."`
	KillSwitch KillSwitchCmd `cmd:"" name:"kill-switch" help:"Turn your kill switch on or off (only a human turns it off)."`
	Posture    PostureCmd    `cmd:"" help:"Show the posture (ACTIVE, REDUCING, HALTED), or enter/leave a human REDUCING."`
	Admin      AdminCmd      `cmd:"" help:"Admin: ceilings, overrides, the admin kill switch, users, bearer tokens."`
	Keys       KeysCmd       `cmd:"" help:"Your exchange key for --venue: add, show, replace, delete."`
	Confirm    ConfirmCmd    `cmd:"" help:"Decide the actions parked for a human: list, approve, reject (needs the server with GX_CONFIRM_CLI_ENABLED=true)."`
	Paper      PaperCmd      `cmd:"" help:"The paper venue's account: status, reset (it lasts across restarts; only reset starts it over)."`
	Agent      AgentCmd      `cmd:"" help:"A console agent: a model with this server's tools over MCP; you answer its confirmation forms on this terminal."`
	Eval       EvalCmd       `cmd:"" help:"Score a model's tool use and safety on the paper venue, case by case, each on a fresh home."`
	Doctor     DoctorCmd     `cmd:"" help:"Check the installation and say what to fix."`
	ClientConf ClientConfCmd `cmd:"" name:"client-config" help:"Print the configuration snippet of an MCP client for this binary and home, and say where it goes."`
	Version    VersionCmd    `cmd:"" help:"Print the version."`
}

// InitCmd is `init`.
type InitCmd struct{}

// Run runs init.
func (c *InitCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return rt.Init(ctx, g, io)
}

// ServeCmd is `serve`.
type ServeCmd struct {
	Transport string   `default:"stdio" enum:"stdio,http" help:"stdio, or http (remote mode: MCP at /mcp, every request with a bearer token from admin token issue)"`
	Listen    string   `default:"127.0.0.1:8000" help:"address for --transport http"`
	DenyTool  []string `name:"deny-tool" help:"withhold a tool from every profile (repeatable; GX_DENY_TOOLS adds a comma-separated list); an unknown name refuses to start" placeholder:"TOOL"`

	Cluster          string        `name:"cluster" help:"run as a member of this cluster (with --transport http; needs --cluster-etcd, --cluster-advertise and --cluster-data)" placeholder:"NAME"`
	ClusterEtcd      string        `name:"cluster-etcd" help:"etcd client endpoints of the cluster, comma-separated" placeholder:"URL[,URL…]"`
	ClusterAdvertise string        `name:"cluster-advertise" help:"HOST:PORT the other members reach this one at (its gRPC listener binds it)" placeholder:"HOST:PORT"`
	ClusterData      string        `name:"cluster-data" help:"the directory every member shares: the shards' journals" placeholder:"DIR"`
	ClusterShards    int           `name:"cluster-shards" default:"16" help:"number of shards, used only when this member creates the cluster (1..1024)" placeholder:"N"`
	ClusterLockTTL   time.Duration `name:"cluster-lock-ttl" hidden:"" help:"lease TTL of the shard locks (tests)"`
}

// Run runs serve. --listen is an address for HTTP only: given without
// --transport http it is a usage error, not silently ignored.
func (c *ServeCmd) Run(ctx context.Context, kctx *kong.Context, g *Globals, rt Runtime, io IO) error {
	if c.Transport != "http" && flagGiven(kctx.Args, "--listen") {
		return &ExitError{Code: ExitCannot, Err: errors.New("--listen is the address of remote mode: add --transport http, or leave --listen out for stdio")}
	}
	cl, err := c.cluster(kctx.Args)
	if err != nil {
		return &ExitError{Code: ExitCannot, Err: err}
	}
	return rt.Serve(ctx, g, ServeOptions{Transport: c.Transport, Listen: c.Listen, DenyTools: c.DenyTool, Cluster: cl}, io)
}

// clusterFlags are serve's cluster flags, as typed on the command line.
var clusterFlags = []string{"--cluster", "--cluster-etcd", "--cluster-advertise", "--cluster-data", "--cluster-shards", "--cluster-lock-ttl"}

// cluster checks the --cluster… flags (fail closed: a member that
// starts with half a configuration would serve some other cluster, or
// none): nil when none is given (local mode, unchanged).
func (c *ServeCmd) cluster(args []string) (*ClusterOptions, error) {
	var given []string
	for _, f := range clusterFlags {
		if flagGiven(args, f) {
			given = append(given, f)
		}
	}
	if len(given) == 0 {
		return nil, nil
	}
	if c.Transport != "http" {
		return nil, fmt.Errorf("%s: a cluster member serves remote mode: add --transport http", given[0])
	}
	if c.Cluster == "" {
		return nil, fmt.Errorf("%s needs --cluster NAME", given[0])
	}
	if !validClusterName(c.Cluster) {
		return nil, errors.New("--cluster: the name must be 1 to 64 letters, digits, '.', '_' or '-'")
	}
	var missing []string
	for _, m := range []struct{ flag, v string }{{"--cluster-etcd", c.ClusterEtcd}, {"--cluster-advertise", c.ClusterAdvertise}, {"--cluster-data", c.ClusterData}} {
		if strings.TrimSpace(m.v) == "" {
			missing = append(missing, m.flag)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("--cluster needs %s", strings.Join(missing, ", "))
	}
	var etcd []string
	for _, e := range strings.Split(c.ClusterEtcd, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, errors.New("--cluster-etcd: an empty endpoint in the list")
		}
		etcd = append(etcd, e)
	}
	if err := checkAdvertise(c.ClusterAdvertise); err != nil {
		return nil, err
	}
	if c.ClusterShards < 1 || c.ClusterShards > MaxClusterShards {
		return nil, fmt.Errorf("--cluster-shards must be 1..%d, got %d", MaxClusterShards, c.ClusterShards)
	}
	if c.ClusterLockTTL < 0 || (c.ClusterLockTTL > 0 && c.ClusterLockTTL < time.Second) {
		return nil, errors.New("--cluster-lock-ttl must be at least 1s")
	}
	return &ClusterOptions{
		Name: c.Cluster, Etcd: etcd, Advertise: c.ClusterAdvertise, DataDir: c.ClusterData,
		Shards: c.ClusterShards, ShardsGiven: flagGiven(args, "--cluster-shards"), LockTTL: c.ClusterLockTTL,
	}, nil
}

// validClusterName: 1 to 64 of [A-Za-z0-9._-] (it is a path segment of
// the cluster's etcd keys), not "." or "..".
func validClusterName(s string) bool {
	if s == "" || len(s) > 64 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// checkAdvertise: HOST:PORT with a host and a port in 1..65535 (the other
// members dial it, so neither may be left to the system).
func checkAdvertise(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Errorf("--cluster-advertise %q: want HOST:PORT", addr)
	}
	if host == "0.0.0.0" || host == "::" {
		return fmt.Errorf("--cluster-advertise %q: the other members must reach this address; name this host's address, not the wildcard", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("--cluster-advertise %q: the port must be 1..65535", addr)
	}
	return nil
}

// DemoCmd is `demo`.
type DemoCmd struct{}

// Run runs demo.
func (c *DemoCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return rt.Demo(ctx, g, io)
}

// SimCmd is `sim`.
type SimCmd struct {
	Listen string `default:"127.0.0.1:0" help:"loopback address to listen on"`
	Seed   int64  `default:"1" help:"seed for deterministic prices"`
}

// Run runs sim.
func (c *SimCmd) Run(ctx context.Context, rt Runtime, io IO) error {
	return rt.Sim(ctx, SimOptions{Listen: c.Listen, Seed: c.Seed}, io)
}

// JournalCmd groups the journal tools.
type JournalCmd struct {
	Dump   JournalDumpCmd   `cmd:"" help:"Print journal records."`
	Verify JournalVerifyCmd `cmd:"" help:"Check the hash chain; exit 1 with the first bad seq on stderr."`
	Head   JournalHeadCmd   `cmd:"" help:"Print the last seq and hash (SEQ:HASH) for external checkpointing."`
}

// JournalDumpCmd is `journal dump`.
type JournalDumpCmd struct {
	Dir    string   `help:"journal directory (default <home>/journal)" placeholder:"PATH"`
	Type   []string `name:"type" help:"only records of these types (repeatable), e.g. tool_call"`
	Since  TimeFlag `help:"only records at or after this time: RFC 3339, a date (YYYY-MM-DD) or a duration before now (24h)" placeholder:"TIME"`
	Until  TimeFlag `help:"only records before this time: RFC 3339, a date (YYYY-MM-DD) or a duration before now (24h)" placeholder:"TIME"`
	Format string   `default:"jsonl" enum:"jsonl,table" help:"jsonl or table"`
}

// Run runs journal dump. The global --user, when given on the command line
// (not from GX_USER or its default), filters the records to that user.
func (c *JournalDumpCmd) Run(ctx context.Context, kctx *kong.Context, g *Globals, rt Runtime, io IO) error {
	user := ""
	if userFlagGiven(kctx.Args) {
		user = g.User
	}
	return rt.JournalDump(ctx, g, DumpOptions{Dir: c.Dir, User: user, Types: c.Type, Since: c.Since.Time, Until: c.Until.Time, Format: c.Format}, io)
}

func userFlagGiven(args []string) bool { return flagGiven(args, "--user") }

// flagGiven reports whether the long flag name (with its dashes) is on the
// command line args, as "--name VALUE" or "--name=VALUE", before any "--".
func flagGiven(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// JournalVerifyCmd is `journal verify`.
type JournalVerifyCmd struct {
	Dir        string `help:"journal directory (default <home>/journal)" placeholder:"PATH"`
	ExpectHead string `help:"a SEQ:HASH checkpoint that must still be in the chain" placeholder:"SEQ:HASH"`
}

// Run runs journal verify.
func (c *JournalVerifyCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return rt.JournalVerify(ctx, g, c.Dir, c.ExpectHead, io)
}

// JournalHeadCmd is `journal head`.
type JournalHeadCmd struct {
	Dir string `help:"journal directory (default <home>/journal)" placeholder:"PATH"`
}

// Run runs journal head.
func (c *JournalHeadCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return rt.JournalHead(ctx, g, c.Dir, io)
}

// DoctorCmd is `doctor`.
type DoctorCmd struct{}

// Run runs doctor.
func (c *DoctorCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return rt.Doctor(ctx, g, io)
}

// ClientConfigOptions are the flags of client-config.
type ClientConfigOptions struct {
	// Client is claude-code, claude-desktop, cursor, vscode or inspector.
	Client string
	// HTTP is the URL of a server run with --transport http; empty for
	// the stdio form.
	HTTP string
}

// ClientConfCmd is `client-config`.
type ClientConfCmd struct {
	Client string `required:"" enum:"claude-code,claude-desktop,cursor,vscode,inspector" help:"claude-code, claude-desktop, cursor, vscode or inspector"`
	HTTP   string `name:"http" placeholder:"URL" help:"the remote form, for a server run with serve --transport http at URL (e.g. http://127.0.0.1:8000/mcp); the bearer token is read from GX_TOKEN by the client, never printed"`
}

// Run runs client-config.
func (c *ClientConfCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return rt.ClientConfig(ctx, g, ClientConfigOptions{Client: c.Client, HTTP: c.HTTP}, io)
}

// VersionCmd is `version`.
type VersionCmd struct{}

// Run runs version.
func (c *VersionCmd) Run(rt Runtime, io IO) error { return rt.Version(io) }
