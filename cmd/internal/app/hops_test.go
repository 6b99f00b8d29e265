package app

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// servedStack is an initialised paper home with its stack started as
// `serve` starts it (GX_CONFIRM_CLI_ENABLED read from the environment).
func servedStack(t testing.TB) (*Runtime, *stackHome) {
	t.Helper()
	r, g := paperHome(t)
	return r, openStack(t, r, g, "serve")
}

// openStack starts the stack of the paper home g as command starts it,
// under the home lock, and stops it when the test ends.
func openStack(t testing.TB, r *Runtime, g *cli.Globals, command string) *stackHome {
	t.Helper()
	p, err := resolvePaths(g)
	if err != nil {
		t.Fatal(err)
	}
	key, err := checkInstallation(p)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := lockHome(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := startStack(context.Background(), p, venueConfig{Name: "paper", Paper: true}, key, r.logger(), "test", command, nil)
	if err != nil {
		lock.release()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.close()
		lock.release()
	})
	return &stackHome{g: g, p: p, st: st}
}

// BenchmarkPolicyPrincipal is the guard's look-up of the caller's profile
// on stdio (policyPrincipal), once per tool call, for a user whose actors
// run.
func BenchmarkPolicyPrincipal(b *testing.B) {
	_, h := servedStack(b)
	principal := policyPrincipal(h.st.sys, h.g.User)
	ctx := context.Background()
	if _, err := principal(ctx, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if p, err := principal(ctx, nil); err != nil || p.User != h.g.User {
			b.Fatal(p, err)
		}
	}
}

// stackHome is a home and the stack serving it.
type stackHome struct {
	g  *cli.Globals
	p  paths
	st *stack
}

// parkOrder lets the home's user trade BTCUSDT on paper with place_order
// confirmed, and parks one order at price for a decision: its
// confirmation id.
func parkOrder(t *testing.T, h *stackHome, price int64) string {
	t.Helper()
	ctx := context.Background()
	trade, paper := messages.ProfileTrade, messages.VenuePaper
	allow, confirm := []string{"linear:BTCUSDT"}, []string{"place_order"}
	if _, err := h.st.sys.Submit(ctx, &messages.SetCeilingRequest{User: h.g.User, Settings: messages.PolicySettings{Profile: &trade, Allow: &allow,
		ConfirmActions: &confirm, VenueCeiling: &paper}}, messages.OriginOfActor(messages.ActorCLIAdmin)); err != nil {
		t.Fatal(err)
	}
	res, err := h.st.sys.Submit(ctx, &messages.PlaceOrderCommand{User: h.g.User, Args: messages.PlaceOrderArgs{Category: messages.CategoryLinear,
		Symbol: "BTCUSDT", Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("0.001"), Price: decimal.NewNullDecimal(decimal.NewFromInt(price))}},
		messages.OriginOfActor(messages.ActorAgent))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := res.(*messages.ConfirmationPending)
	if !ok {
		t.Fatalf("not parked: %T", res)
	}
	return p.ConfirmationID
}

// slowReader answers "y" once after wait, like a human who reads the plan
// for a while.
type slowReader struct {
	wait time.Duration
	done bool
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	time.Sleep(r.wait)
	r.done = true
	return copy(p, "y\n"), nil
}

// `confirm approve` reads the plan and decides it over one connection of
// the control socket, counted where the server accepts them: with --yes,
// and with a human who reads the plan for longer than the server lets a
// connection idle (the client holds it open). `confirm reject` is one
// connection too.
func TestConfirmApproveIsOneConnection(t *testing.T) {
	t.Setenv("GX_CONFIRM_CLI_ENABLED", "true")
	r, h := servedStack(t)
	layout, err := control.ResolveLayout(h.p.Home, uint32(os.Getuid()), r.getenv)
	if err != nil {
		t.Fatal(err)
	}
	const idle = 1500 * time.Millisecond
	srv, err := control.Listen(layout, h.st, nil, control.Limits{Idle: idle})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	run := func(what string, cmd interface {
		Run(context.Context, *cli.Globals, cli.Runtime, cli.IO) error
	}, in io.Reader) string {
		t.Helper()
		var out, errb strings.Builder
		before := srv.Accepted()
		if err := cmd.Run(ctx, h.g, r, cli.IO{Out: &out, Err: &errb, In: in}); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, errb.String())
		}
		if n := srv.Accepted() - before; n != 1 {
			t.Fatalf("%s opened %d connections to the control socket, want 1", what, n)
		}
		return out.String()
	}
	id := parkOrder(t, h, 30001)
	if out := run("confirm approve --yes", &cli.ConfirmApproveCmd{ID: id, Yes: true}, strings.NewReader("")); !strings.Contains(out, "approved "+id) {
		t.Fatalf("approve: %s", out)
	}
	id = parkOrder(t, h, 30002)
	if out := run("confirm approve, a slow human", &cli.ConfirmApproveCmd{ID: id}, &slowReader{wait: 2*idle + time.Second}); !strings.Contains(out, "approved "+id) {
		t.Fatalf("approve after a long read: %s", out)
	}
	id = parkOrder(t, h, 30003)
	if out := run("confirm reject", &cli.ConfirmRejectCmd{ID: id}, nil); !strings.Contains(out, "rejected "+id) {
		t.Fatalf("reject: %s", out)
	}
}
