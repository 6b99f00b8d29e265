package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// fakeRuntime records what the commands asked for; it is the test double of
// the composition root.
type fakeRuntime struct {
	delivered []messages.Command
	dumped    []DumpOptions
	served    []ServeOptions
	clusters  []ClusterStatusOptions
	answer    any
	err       error
}

var _ Runtime = (*fakeRuntime)(nil)

func (f *fakeRuntime) Init(context.Context, *Globals, IO) error { return nil }
func (f *fakeRuntime) Serve(_ context.Context, _ *Globals, o ServeOptions, _ IO) error {
	f.served = append(f.served, o)
	return f.err
}
func (f *fakeRuntime) Demo(context.Context, *Globals, IO) error  { return nil }
func (f *fakeRuntime) Sim(context.Context, SimOptions, IO) error { return nil }
func (f *fakeRuntime) JournalDump(_ context.Context, _ *Globals, o DumpOptions, _ IO) error {
	f.dumped = append(f.dumped, o)
	return nil
}
func (f *fakeRuntime) JournalVerify(context.Context, *Globals, string, string, IO) error { return nil }
func (f *fakeRuntime) JournalHead(context.Context, *Globals, string, IO) error           { return nil }
func (f *fakeRuntime) ClusterStatus(_ context.Context, _ *Globals, o ClusterStatusOptions, _ IO) error {
	f.clusters = append(f.clusters, o)
	return nil
}
func (f *fakeRuntime) Doctor(context.Context, *Globals, IO) error { return nil }
func (f *fakeRuntime) Version(IO) error                           { return nil }
func (f *fakeRuntime) ClientConfig(context.Context, *Globals, ClientConfigOptions, IO) error {
	return nil
}
func (f *fakeRuntime) Deliver(_ context.Context, _ *Globals, cmd messages.Command) (any, error) {
	f.delivered = append(f.delivered, cmd)
	if f.err != nil {
		return nil, f.err
	}
	if f.answer != nil {
		return f.answer, nil
	}
	return &messages.PolicyView{User: "local", KillSwitch: messages.KillSwitchNone}, nil
}

func (f *fakeRuntime) DialServer(_ context.Context, g *Globals) (ServerConn, error) {
	return fakeConn{send: func(ctx context.Context, cmd messages.Command) (any, error) { return f.Deliver(ctx, g, cmd) }}, nil
}

// fakeConn is a control connection that hands each command to send.
type fakeConn struct {
	send func(context.Context, messages.Command) (any, error)
}

func (c fakeConn) Send(ctx context.Context, cmd messages.Command) (any, error) {
	return c.send(ctx, cmd)
}
func (c fakeConn) Hold() func() error { return func() error { return nil } }
func (c fakeConn) Close() error       { return nil }

func runCLI(t *testing.T, rt *fakeRuntime, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, rt, IO{Out: &out, Err: &errb, In: strings.NewReader(stdin)}, "test")
	return code, out.String(), errb.String()
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		name string
		err  error
		args []string
		want int
	}{
		{"usage: unknown command", nil, []string{"nope"}, ExitCannot},
		{"usage: bad enum", nil, []string{"--venue", "moon", "version"}, ExitCannot},
		{"ok", nil, []string{"version"}, ExitOK},
		{"refused", messages.Errorf(messages.CodePermissionDenied, "no"), []string{"policy", "show"}, ExitRefused},
		{"cannot start", CannotStart("home missing"), []string{"serve"}, ExitCannot},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, &fakeRuntime{err: c.err}, "", c.args...)
			if code != c.want {
				t.Fatalf("exit %d, want %d (%s)", code, c.want, stderr)
			}
			if c.err != nil && !strings.HasPrefix(stderr, "guarded-exchange: ") {
				t.Fatalf("stderr %q", stderr)
			}
		})
	}
}

func TestPolicyFlagsToSettings(t *testing.T) {
	rt := &fakeRuntime{}
	code, _, stderr := runCLI(t, rt, "", "admin", "policy", "set-ceiling", "--user", "bob",
		"--profile", "trade", "--allow", "linear:BTCUSDT,spot:ETHUSDT", "--max-leverage", "5", "--confirm", "none", "--trust-client-ui", "false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c := rt.delivered[0].(*messages.SetCeilingRequest)
	if c.User != "bob" || *c.Settings.Profile != messages.ProfileTrade || len(*c.Settings.Allow) != 2 ||
		c.Settings.MaxLeverage.String() != "5" || len(*c.Settings.ConfirmActions) != 0 || *c.Settings.TrustClientUI {
		t.Fatalf("settings %+v", c.Settings)
	}
	for _, bad := range [][]string{
		{"--max-leverage", "1e3"}, {"--max-leverage=-1", "-1"}, {"--slippage-pct", "4"}, {"--allow", "NOCATEGORYX"},
		{"--confirm", "withdraw"}, {"--confirmation-ttl", "9999"}, {"--max-pending", "QQQ"},
	} {
		rt := &fakeRuntime{}
		args := append([]string{"policy", "tighten"}, bad...)
		if strings.Contains(bad[0], "=") {
			args = []string{"policy", "tighten", bad[0]}
		}
		code, _, stderr := runCLI(t, rt, "", args...)
		if code != ExitRefused || !strings.Contains(stderr, "invalid_params") || len(rt.delivered) != 0 {
			t.Fatalf("%v: exit %d, delivered %d: %s", bad, code, len(rt.delivered), stderr)
		}
		if strings.Contains(stderr, bad[1]) && bad[1] != "4" {
			t.Fatalf("%v: the rejected value was echoed: %s", bad, stderr)
		}
	}
	if code, _, _ := runCLI(t, &fakeRuntime{}, "", "policy", "tighten"); code != ExitCannot {
		t.Fatalf("tighten without flags: exit %d", code)
	}
}

func TestConfirmationPrompts(t *testing.T) {
	// Without --yes, a closed stdin refuses and nothing is sent.
	rt := &fakeRuntime{}
	code, _, stderr := runCLI(t, rt, "", "kill-switch", "off")
	if code != ExitRefused || len(rt.delivered) != 0 || !strings.Contains(stderr, "--yes") {
		t.Fatalf("closed stdin: exit %d, delivered %d, %q", code, len(rt.delivered), stderr)
	}
	rt = &fakeRuntime{}
	if code, _, _ := runCLI(t, rt, "n\n", "kill-switch", "off"); code != ExitRefused || len(rt.delivered) != 0 {
		t.Fatalf("answered no: exit %d", code)
	}
	rt = &fakeRuntime{}
	if code, _, _ := runCLI(t, rt, "y\n", "kill-switch", "off"); code != 0 || len(rt.delivered) != 1 {
		t.Fatalf("answered yes: exit %d", code)
	}
	if c := rt.delivered[0].(*messages.SetKillSwitchRequest); c.On || c.Level != messages.KillSwitchUser {
		t.Fatalf("kill-switch off sent %+v", c)
	}
	// Turning it on never asks.
	rt = &fakeRuntime{}
	if code, _, _ := runCLI(t, rt, "", "kill-switch", "on"); code != 0 || !rt.delivered[0].(*messages.SetKillSwitchRequest).On {
		t.Fatalf("kill-switch on: exit %d", code)
	}
}

func TestAdminCommandsNeedUser(t *testing.T) {
	for _, args := range [][]string{
		{"admin", "kill-switch", "off", "--yes"},
		{"admin", "policy", "reset-overrides", "--yes"},
	} {
		rt := &fakeRuntime{}
		if code, _, _ := runCLI(t, rt, "", args...); code != ExitCannot || len(rt.delivered) != 0 {
			t.Fatalf("%v without --user: exit %d", args, code)
		}
	}
	rt := &fakeRuntime{}
	if code, _, _ := runCLI(t, rt, "", "admin", "kill-switch", "on", "--user", "bob"); code != 0 {
		t.Fatalf("admin kill-switch on: exit %d", code)
	}
	if c := rt.delivered[0].(*messages.SetKillSwitchRequest); c.User != "bob" || c.Level != messages.KillSwitchAdmin {
		t.Fatalf("sent %+v", c)
	}
}

func TestKeysReadTwoLinesFromStdin(t *testing.T) {
	rt := &fakeRuntime{answer: &messages.CredentialView{Present: true, Fingerprint: "fp_x", Changed: true}}
	code, out, stderr := runCLI(t, rt, "KEY123\nSECRET456\n", "keys", "add")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c := rt.delivered[0].(*messages.AddCredentialRequest)
	if c.APIKey != "KEY123" || c.APISecret.Reveal() != "SECRET456" || c.Environment != "paper" {
		t.Fatalf("sent key %q env %q", c.APIKey, c.Environment)
	}
	if strings.Contains(out+stderr, "SECRET456") {
		t.Fatal("the secret was printed")
	}
	for _, stdin := range []string{"", "KEY only\n", "\n\n"} {
		rt := &fakeRuntime{}
		if code, _, _ := runCLI(t, rt, stdin, "keys", "add"); code != ExitRefused || len(rt.delivered) != 0 {
			t.Fatalf("stdin %q: exit %d", stdin, code)
		}
	}
}

func TestCodeOf(t *testing.T) {
	if CodeOf(nil) != ExitOK || CodeOf(errors.New("x")) != ExitRefused || CodeOf(CannotStart("x")) != ExitCannot {
		t.Fatal("CodeOf")
	}
}

// policy show states the confirmation rule of the effective policy in one
// line: the default confirms every trading tool always, so the threshold
// asks for nothing more.
func TestPolicyShowStatesTheConfirmationRule(t *testing.T) {
	p := messages.DefaultPolicy(messages.VenuePaper)
	p.ConfirmAboveNotionalUSDT = decimal.NewFromInt(200)
	rt := &fakeRuntime{answer: &messages.PolicyView{User: "local", KillSwitch: messages.KillSwitchNone, Effective: p}}
	code, out, stderr := runCLI(t, rt, "", "policy", "show")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "\nconfirmation: always confirmed (confirm_actions): place_order, cancel_order, amend_order, cancel_all_orders, set_trading_stop, close_position, set_leverage; " +
		"confirmed only at or above 200 USDT (confirm_above_notional_usdt): none; never confirmed: none\n"
	if !strings.Contains(out, want) {
		t.Fatalf("policy show does not state the rule %q:\n%s", want, out)
	}
}

// cluster status takes the cluster's name and etcd endpoints (comma-separated
// or repeated); both are required, and --format is table or json.
func TestClusterStatusFlags(t *testing.T) {
	rt := &fakeRuntime{}
	code, _, stderr := runCLI(t, rt, "", "cluster", "status", "--cluster", "demo", "--cluster-etcd", "http://127.0.0.1:2379,127.0.0.1:2380", "--cluster-data", "/srv/gx", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := ClusterStatusOptions{Cluster: "demo", Etcd: []string{"http://127.0.0.1:2379", "127.0.0.1:2380"}, Data: "/srv/gx", Format: "json"}
	if len(rt.clusters) != 1 || rt.clusters[0].Cluster != want.Cluster || strings.Join(rt.clusters[0].Etcd, " ") != strings.Join(want.Etcd, " ") ||
		rt.clusters[0].Data != want.Data || rt.clusters[0].Format != want.Format {
		t.Fatalf("options %+v, want %+v", rt.clusters, want)
	}
	for _, args := range [][]string{
		{"cluster", "status", "--cluster-etcd", "127.0.0.1:2379"},
		{"cluster", "status", "--cluster", "demo"},
		{"cluster", "status", "--cluster", "demo", "--cluster-etcd", "127.0.0.1:2379", "--format", "yaml"},
	} {
		rt := &fakeRuntime{}
		if code, _, _ := runCLI(t, rt, "", args...); code != ExitCannot || len(rt.clusters) != 0 {
			t.Fatalf("%v: exit %d, ran %d, want a usage error", args, code, len(rt.clusters))
		}
	}
}
