package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// The exact lines doctor prints about what keeps an agent from trading.
func TestTradeBlockersTexts(t *testing.T) {
	paper := venueConfig{Name: "paper", Paper: true}
	fresh := &messages.PolicyView{User: "local", Effective: messages.DefaultPolicy(messages.VenuePaper), KillSwitch: messages.KillSwitchNone}
	ready := func(edit func(*messages.Policy)) *messages.PolicyView {
		pol := messages.DefaultPolicy(messages.VenuePaper)
		pol.Profile = messages.ProfileTrade
		pol.Allow = []string{"linear:BTCUSDT"}
		pol.ConfirmActions = []string{}
		if edit != nil {
			edit(&pol)
		}
		return &messages.PolicyView{User: "local", Effective: pol, KillSwitch: messages.KillSwitchNone}
	}
	tools := strings.Join(messages.TradingTools, ", ")
	cases := []struct {
		name       string
		view       *messages.PolicyView
		vc         venueConfig
		cliChannel bool
		want       []string
	}{
		{"fresh home", fresh, paper, false, []string{
			"what still stands between the agent of local and a trade on paper:",
			"next  profile is read_only: the agent can only read. Run: guarded-exchange admin policy set-ceiling --user local --profile trade",
			"next  the allowlist is empty: no symbol may be traded. Run: guarded-exchange admin policy set-ceiling --user local --allow linear:BTCUSDT",
			"note  " + tools + " wait for a human on the MCP client's own form: a client without forms (elicitation) gets them refused. To approve from a terminal instead, start serve with GX_CONFIRM_CLI_ENABLED=true",
		}},
		{"ready", ready(nil), paper, false, []string{
			"nothing in the policy stands between the agent of local and a trade on paper",
		}},
		{"no confirmation channel", ready(func(p *messages.Policy) {
			p.ConfirmActions = []string{"place_order"}
			p.TrustClientUI = false
		}), paper, false, []string{
			"what still stands between the agent of local and a trade on paper:",
			"next  place_order need a human but no confirmation channel is open (trust_client_ui is false). Start serve with GX_CONFIRM_CLI_ENABLED=true, or run: guarded-exchange admin policy set-ceiling --user local --confirm none",
		}},
		{"CLI channel", ready(func(p *messages.Policy) { p.ConfirmActions = []string{"place_order"} }), paper, true, []string{
			"nothing in the policy stands between the agent of local and a trade on paper",
			"note  place_order wait for a human: approve with guarded-exchange confirm approve ID (GX_CONFIRM_CLI_ENABLED=true)",
		}},
		{"leverage under the paper start", ready(func(p *messages.Policy) { p.MaxLeverage = decimal.NewFromInt(5) }), paper, false, []string{
			"nothing in the policy stands between the agent of local and a trade on paper",
			"note  paper accounts start every symbol at 10x, above max_leverage 5: an order needs the symbol's leverage at 5 or less (set_leverage sets it); doctor cannot read an account's leverage",
		}},
		{"kill switch and live venue", func() *messages.PolicyView {
			v := ready(nil)
			v.KillSwitch = messages.KillSwitchAdmin
			return v
		}(), venueConfig{Name: "bybit-live"}, false, []string{
			"what still stands between the agent of local and a trade on bybit-live:",
			"next  the admin kill switch is on: no new orders. Run: guarded-exchange admin kill-switch off --user local",
			"next  venue bybit-live is above the venue ceiling demo: every order is refused. Run: guarded-exchange admin policy set-ceiling --user local --venue-ceiling live (live also needs explicit caps, see README)",
		}},
	}
	for _, c := range cases {
		got := tradeBlockers(c.view, c.vc, c.cliChannel)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, got, c.want)
		}
	}
}

// A home with no lock file (or no home at all) has no server: doctor says
// so plainly, not "server running: open ...: no such file".
func TestDoctorServerLine(t *testing.T) {
	p := paths{Home: filepath.Join(t.TempDir(), "missing")}
	var lines []string
	ok := func(f string, a ...any) { lines = append(lines, "ok "+strings.TrimSpace(fmt.Sprintf(f, a...))) }
	bad := func(f string, a ...any) { lines = append(lines, "FIX "+fmt.Sprintf(f, a...)) }
	r := &Runtime{}
	r.doctorServer(p, ok, bad)
	if !slices.Equal(lines, []string{"ok server not running"}) {
		t.Fatalf("no home: %q", lines)
	}
	p.Home = t.TempDir()
	lines = nil
	r.doctorServer(p, ok, bad)
	if !slices.Equal(lines, []string{"ok server not running"}) {
		t.Fatalf("home without a lock file: %q", lines)
	}
	held, err := lockHome(p)
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	lines = nil
	r.doctorServer(p, ok, bad)
	want := "ok server running: another process (pid " + strconv.Itoa(os.Getpid()) + ") holds the lock on " + p.Home
	if !slices.Equal(lines, []string{want}) {
		t.Fatalf("held lock: %q, want %q", lines, want)
	}
}
