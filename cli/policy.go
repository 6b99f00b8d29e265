package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"

	"github.com/alecthomas/kong"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// PolicyFlags mirror the docs/policy.md fields. An empty flag is not set. Each
// flag's name is its field's Flag in messages.PolicyFieldTable, and its help
// text comes from there too (applyPolicyHelp); Settings parses every flag
// through the table, so a field is described in one place.
type PolicyFlags struct {
	Profile               string   `name:"profile" help:"policy:profile" enum:",read_only,trade" default:""`
	Allow                 []string `name:"allow" help:"policy:allow" sep:"," placeholder:"linear:BTCUSDT"`
	MaxOrderNotional      string   `name:"max-order-notional" help:"policy:max_order_notional_usdt" placeholder:"USDT"`
	MaxLeverage           string   `name:"max-leverage" help:"policy:max_leverage" placeholder:"X"`
	SlippagePct           string   `name:"slippage-pct" help:"policy:slippage_pct" placeholder:"PCT"`
	Confirm               string   `name:"confirm" help:"policy:confirm_actions" placeholder:"TOOLS"`
	ConfirmAboveNotional  string   `name:"confirm-above-notional" help:"policy:confirm_above_notional_usdt" placeholder:"USDT"`
	ConfirmationTTL       string   `name:"confirmation-ttl" help:"policy:confirmation_ttl_s" placeholder:"SECONDS"`
	TrustClientUI         string   `name:"trust-client-ui" help:"policy:trust_client_ui" enum:",true,false" default:""`
	MaxPending            string   `name:"max-pending" help:"policy:max_pending" placeholder:"N"`
	DailyNotionalCap      string   `name:"daily-notional-cap" help:"policy:daily_notional_cap_usdt" placeholder:"USDT"`
	MaxUnconfirmedPerHour string   `name:"max-unconfirmed-per-hour" help:"policy:max_unconfirmed_actions_per_hour" placeholder:"N"`
	MaxOrdersPerMinute    string   `name:"max-orders-per-minute" help:"policy:max_orders_per_minute" placeholder:"N"`
	VenueCeiling          string   `name:"venue-ceiling" help:"policy:venue_ceiling" enum:",paper,demo,live" default:""`
	StreamStale           string   `name:"stream-stale" help:"policy:stream_stale_s" placeholder:"SECONDS"`
	MaxDailyLoss          string   `name:"max-daily-loss" help:"policy:max_daily_loss_usdt" placeholder:"USDT"`
	CancelOnDisconnect    string   `name:"cancel-on-disconnect" help:"policy:cancel_on_disconnect" enum:",true,false" default:""`
	Heartbeat             string   `name:"heartbeat" help:"policy:heartbeat_s" placeholder:"SECONDS"`
}

// policyHelpPrefix marks a policy flag's help tag: the rest is the
// field's name in messages.PolicyFieldTable, whose help text applyPolicyHelp
// puts in its place once the parser is built. Not kong variables: kong
// interpolates every variable of the parser for every flag, which made
// building the parser a quarter of serve's start-up.
const policyHelpPrefix = "policy:"

// applyPolicyHelp gives every policy flag of the parser its help text from
// the field table.
func applyPolicyHelp(app *kong.Application) error {
	help := make(map[string]string, len(messages.PolicyFieldTable))
	for _, f := range messages.PolicyFieldTable {
		help[f.Name] = f.Help
	}
	return kong.Visit(app, func(node kong.Visitable, next kong.Next) error {
		if v, ok := node.(*kong.Value); ok {
			if name, ok := strings.CutPrefix(v.Help, policyHelpPrefix); ok {
				h, found := help[name]
				if !found {
					return fmt.Errorf("flag --%s: no policy field %q", v.Name, name)
				}
				v.Help = h
			}
		}
		return next(nil)
	})
}

// flagValues maps each policy flag name (its kong name tag) to the value
// given, "" when not given.
func (f *PolicyFlags) flagValues() map[string]string {
	out := map[string]string{}
	rv := reflect.ValueOf(f).Elem()
	rt := rv.Type()
	for i := range rt.NumField() {
		name := rt.Field(i).Tag.Get("name")
		switch v := rv.Field(i).Interface().(type) {
		case string:
			out[name] = v
		case []string:
			out[name] = strings.Join(v, ",")
			if len(v) > 0 && out[name] == "" {
				out[name] = "none"
			}
		}
	}
	return out
}

// Settings turns the flags into typed settings through the field table; a
// malformed value is invalid_params naming the field.
func (f *PolicyFlags) Settings() (messages.PolicySettings, error) {
	var s messages.PolicySettings
	values := f.flagValues()
	for _, field := range messages.PolicyFieldTable {
		v := values[field.Flag]
		if v == "" {
			continue
		}
		if e := field.Parse(v, &s); e != nil {
			return s, e
		}
	}
	if len(s.Fields()) == 0 {
		return s, &ExitError{Code: ExitCannot, Err: errors.New("give at least one policy flag (see --help)")}
	}
	if e := s.Validate(); e != nil {
		return s, e
	}
	return s, nil
}

// PolicyCmd is `policy`.
type PolicyCmd struct {
	Show    PolicyShowCmd    `cmd:"" help:"Show the effective policy, the admin ceiling, your own settings and the kill switch."`
	Tighten PolicyTightenCmd `cmd:"" help:"Make your own policy stricter; anything looser than the current effective value is refused."`
}

// PolicyShowCmd is `policy show`.
type PolicyShowCmd struct {
	JSON bool `name:"json" help:"print JSON"`
}

// Run runs policy show.
func (c *PolicyShowCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return deliverAndPrint(ctx, g, rt, io, &messages.ShowPolicyRequest{User: g.User}, c.JSON)
}

// PolicyTightenCmd is `policy tighten`.
type PolicyTightenCmd struct {
	PolicyFlags
	JSON bool `name:"json" help:"print JSON"`
}

// Run runs policy tighten.
func (c *PolicyTightenCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	s, err := c.Settings()
	if err != nil {
		return refusal(err)
	}
	return deliverAndPrint(ctx, g, rt, io, &messages.TightenPolicyRequest{User: g.User, Settings: s}, c.JSON)
}

// KillSwitchCmd is `kill-switch on|off`.
type KillSwitchCmd struct {
	State string `arg:"" enum:"on,off" help:"on or off"`
	Yes   bool   `help:"do not ask before turning it off"`
	JSON  bool   `name:"json" help:"print JSON"`
}

// Run runs kill-switch.
func (c *KillSwitchCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	if c.State == "off" {
		if err := confirm(io, fmt.Sprintf("Turn off the kill switch of %s? Risk-increasing actions will be allowed again.", g.User), c.Yes); err != nil {
			return err
		}
	}
	return deliverAndPrint(ctx, g, rt, io, &messages.SetKillSwitchRequest{User: g.User, On: c.State == "on", Level: messages.KillSwitchUser}, c.JSON)
}

// AdminCmd is `admin`.
type AdminCmd struct {
	Policy     AdminPolicyCmd     `cmd:"" help:"Set a user's ceiling or remove their own settings."`
	KillSwitch AdminKillSwitchCmd `cmd:"" name:"kill-switch" help:"The admin's kill switch for a user: only an admin turns it off."`
	User       AdminUserCmd       `cmd:"" help:"Create, list or disable users."`
	Token      AdminTokenCmd      `cmd:"" help:"Bearer tokens for remote mode: issue, revoke, list."`
}

// AdminPolicyCmd is `admin policy`.
type AdminPolicyCmd struct {
	SetCeiling     SetCeilingCmd     `cmd:"" name:"set-ceiling" help:"Set fields of the user's ceiling (--user, default local); may loosen or tighten."`
	ResetOverrides ResetOverridesCmd `cmd:"" name:"reset-overrides" help:"Remove the user's own settings (all, or the --field ones); asks first unless --yes."`
}

// SetCeilingCmd is `admin policy set-ceiling`.
type SetCeilingCmd struct {
	PolicyFlags
	JSON bool `name:"json" help:"print JSON"`
}

// Run runs admin policy set-ceiling.
func (c *SetCeilingCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	s, err := c.Settings()
	if err != nil {
		return refusal(err)
	}
	return deliverAndPrint(ctx, g, rt, io, &messages.SetCeilingRequest{User: g.User, Settings: s}, c.JSON)
}

// ResetOverridesCmd is `admin policy reset-overrides --user U [--field F]...`.
type ResetOverridesCmd struct {
	Field []string `name:"field" help:"a policy field to remove (repeatable); all own settings when none is given" placeholder:"FIELD"`
	Yes   bool     `help:"do not ask"`
	JSON  bool     `name:"json" help:"print JSON"`
}

// Run lists what will be removed, asks, then removes it.
func (c *ResetOverridesCmd) Run(ctx context.Context, kctx *kong.Context, g *Globals, rt Runtime, io IO) error {
	if !userFlagGiven(kctx.Args) {
		return &ExitError{Code: ExitCannot, Err: errors.New("admin policy reset-overrides needs --user")}
	}
	for _, f := range c.Field {
		if !messages.IsFieldName(f) {
			return refusal(messages.InvalidParams("field", "must be a policy field name such as max_leverage"))
		}
	}
	res, err := rt.Deliver(ctx, g, &messages.ShowPolicyRequest{User: g.User})
	if err != nil {
		return refusal(err)
	}
	own := res.(*messages.PolicyView).Own
	var remove []string
	for _, f := range own.Fields() {
		if len(c.Field) == 0 || contains(c.Field, f) {
			remove = append(remove, f)
		}
	}
	if len(remove) == 0 {
		fmt.Fprintf(io.Out, "%s has no own settings to remove; nothing changed\n", g.User)
		return nil
	}
	fmt.Fprintf(io.Out, "will remove from %s's own settings:\n", g.User)
	for _, name := range remove {
		f, _ := messages.PolicyFieldByName(name)
		fmt.Fprintf(io.Out, "  %-34s %s\n", name, f.ShowSet(own))
	}
	if err := confirm(io, "Remove these settings?", c.Yes); err != nil {
		return err
	}
	return deliverAndPrint(ctx, g, rt, io, &messages.ResetOverridesRequest{User: g.User, Fields: remove}, c.JSON)
}

// AdminKillSwitchCmd is `admin kill-switch on|off --user U`.
type AdminKillSwitchCmd struct {
	State string `arg:"" enum:"on,off" help:"on or off"`
	Yes   bool   `help:"do not ask before turning it off"`
	JSON  bool   `name:"json" help:"print JSON"`
}

// Run runs admin kill-switch.
func (c *AdminKillSwitchCmd) Run(ctx context.Context, kctx *kong.Context, g *Globals, rt Runtime, io IO) error {
	if !userFlagGiven(kctx.Args) {
		return &ExitError{Code: ExitCannot, Err: errors.New("admin kill-switch needs --user")}
	}
	if c.State == "off" {
		if err := confirm(io, fmt.Sprintf("Turn off the admin kill switch of %s?", g.User), c.Yes); err != nil {
			return err
		}
	}
	return deliverAndPrint(ctx, g, rt, io, &messages.SetKillSwitchRequest{User: g.User, On: c.State == "on", Level: messages.KillSwitchAdmin}, c.JSON)
}

// AdminUserCmd is `admin user`.
type AdminUserCmd struct {
	Create  AdminUserCreateCmd  `cmd:"" help:"Create a user (read_only, empty allowlist, ceiling demo)."`
	List    AdminUserListCmd    `cmd:"" help:"List users."`
	Disable AdminUserDisableCmd `cmd:"" help:"Disable a user: every later command and tool call for it is refused."`
}

// AdminUserCreateCmd is `admin user create NAME`.
type AdminUserCreateCmd struct {
	Name string `arg:"" help:"user name"`
	JSON bool   `name:"json" help:"print JSON"`
}

// Run runs admin user create.
func (c *AdminUserCreateCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return deliverAndPrint(ctx, g, rt, io, &messages.CreateUserRequest{User: c.Name}, c.JSON)
}

// AdminUserListCmd is `admin user list`.
type AdminUserListCmd struct {
	JSON bool `name:"json" help:"print JSON"`
}

// Run runs admin user list.
func (c *AdminUserListCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return deliverAndPrint(ctx, g, rt, io, &messages.ListUsersRequest{}, c.JSON)
}

// AdminUserDisableCmd is `admin user disable NAME`.
type AdminUserDisableCmd struct {
	Name string `arg:"" help:"user name"`
	Yes  bool   `help:"do not ask"`
	JSON bool   `name:"json" help:"print JSON"`
}

// Run runs admin user disable.
func (c *AdminUserDisableCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	if err := confirm(io, fmt.Sprintf("Disable user %s?", c.Name), c.Yes); err != nil {
		return err
	}
	return deliverAndPrint(ctx, g, rt, io, &messages.DisableUserRequest{User: c.Name}, c.JSON)
}

// confirm asks on Err and reads one answer from In. Without --yes, a closed
// or empty stdin refuses: a script must say --yes.
func confirm(o IO, question string, yes bool) error {
	if yes {
		return nil
	}
	fmt.Fprintf(o.Err, "%s [y/N] ", question)
	if o.In == nil {
		return Refused("not confirmed (no answer on stdin; pass --yes to skip the question)")
	}
	line, err := bufio.NewReader(o.In).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	if answer == "y" || answer == "yes" {
		return nil
	}
	if err != nil && answer == "" {
		return Refused("not confirmed (no answer on stdin; pass --yes to skip the question)")
	}
	return Refused("not confirmed")
}

// refusal turns an error into exit 1 (a *messages.Error keeps its code in
// the message), keeping exit codes already chosen.
func refusal(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: ExitRefused, Err: err}
}

func deliverAndPrint(ctx context.Context, g *Globals, rt Runtime, io IO, cmd messages.Command, asJSON bool) error {
	res, err := rt.Deliver(ctx, g, cmd)
	if err != nil {
		return refusal(err)
	}
	warnPolicy(rt, io, cmd, res)
	if asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return refusal(err)
		}
		_, err = fmt.Fprintf(io.Out, "%s\n", b)
		return err
	}
	switch v := res.(type) {
	case *messages.PolicyView:
		_, shown := cmd.(*messages.ShowPolicyRequest)
		printView(io.Out, v, !shown)
	case *messages.CredentialView:
		printCredential(io.Out, v)
	case *messages.UserList:
		tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tPROFILE\tKILL SWITCH\tDISABLED")
		for _, u := range v.Users {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", u.User, u.Profile, u.KillSwitch, u.Disabled)
		}
		tw.Flush()
	}
	return nil
}

// warnPolicy prints on stderr the runtime's warnings about a policy a
// command changed (not one it only showed).
func warnPolicy(rt Runtime, io IO, cmd messages.Command, res any) {
	v, ok := res.(*messages.PolicyView)
	w, warns := rt.(PolicyWarner)
	if _, shown := cmd.(*messages.ShowPolicyRequest); !ok || !warns || shown {
		return
	}
	for _, line := range w.PolicyWarnings(v.Effective) {
		fmt.Fprintf(io.Err, "guarded-exchange: warning: %s\n", messages.Printable(line))
	}
}

// printView prints a policy view; change says whether the command could
// change it (then a line says whether it did): a show has nothing to say
// about changes.
func printView(w io.Writer, v *messages.PolicyView, change bool) {
	status := ""
	if v.Disabled {
		status = "  (disabled)"
	}
	fmt.Fprintf(w, "user %s%s   kill switch: %s\n", v.User, status, v.KillSwitch)
	switch {
	case !change:
	case len(v.Removed) > 0:
		fmt.Fprintf(w, "removed: %s\n", strings.Join(v.Removed, ", "))
	case v.Changed:
		fmt.Fprintln(w, "changed (journaled)")
	default:
		fmt.Fprintln(w, "no change: the policy already was this")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tEFFECTIVE\tCEILING\tOWN")
	for _, f := range messages.PolicyFieldTable {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, f.Show(v.Effective), orDash(f.ShowSet(v.Ceiling)), orDash(f.ShowSet(v.Own)))
	}
	tw.Flush()
	fmt.Fprintf(w, "confirmation: %s\n", v.Effective.ConfirmationRule())
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
