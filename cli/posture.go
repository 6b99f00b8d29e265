package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// PostureCmd is `posture show|reduce|resume [--user U]`: where a user
// stands, and the human REDUCING. Only a human resumes; the agent can
// only enter REDUCING (reduce_risk_only).
type PostureCmd struct {
	Action string `arg:"" enum:"show,reduce,resume" help:"show; reduce (only risk-reducing actions go through); resume (lift the human REDUCING; asks first unless --yes)"`
	Yes    bool   `help:"do not ask before resuming"`
	JSON   bool   `name:"json" help:"print JSON"`
}

// Run runs posture.
func (c *PostureCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	var cmd messages.Command = &messages.ShowPostureRequest{User: g.User}
	if c.Action == "resume" {
		// Resuming lets risk-increasing actions through again: it asks
		// like turning the kill switch off does.
		if err := confirm(io, fmt.Sprintf("Lift the REDUCING posture of %s? Risk-increasing actions will be allowed again.", g.User), c.Yes); err != nil {
			return err
		}
	}
	if c.Action != "show" {
		cmd = &messages.SetPostureRequest{User: g.User, Reduce: c.Action == "reduce"}
	}
	res, err := rt.Deliver(ctx, g, cmd)
	if err != nil {
		return refusal(err)
	}
	v, ok := res.(*messages.PostureView)
	if !ok {
		return refusal(fmt.Errorf("unexpected answer %T", res))
	}
	if c.JSON {
		b, err := json.Marshal(v)
		if err != nil {
			return refusal(err)
		}
		_, err = fmt.Fprintf(io.Out, "%s\n", b)
		return err
	}
	printPosture(io.Out, v)
	return nil
}

func printPosture(w io.Writer, v *messages.PostureView) {
	why := ""
	if len(v.Why) > 0 {
		why = " (" + strings.Join(v.Why, ", ") + ")"
	}
	fmt.Fprintf(w, "user %s on %s: %s%s   kill switch: %s\n", v.User, v.Venue, v.State, why, v.KillSwitch)
	if v.Changed {
		fmt.Fprintln(w, "changed (journaled)")
	}
	for _, name := range messages.PolicyFields {
		if l, ok := v.Limits[name]; ok {
			fmt.Fprintf(w, "  %-34s used %s, %s left\n", name, l.Used, l.Left)
		}
	}
	fmt.Fprintf(w, "  daily loss %s of %s USDT\n", v.Loss.LossUSDT, v.Loss.MaxUSDT)
	fmt.Fprintf(w, "  stream: %s\n", streamLine(v.Stream))
}

// streamLine says in words how the private stream is: not running,
// connected or down, and how old its last message is ("no message yet"
// rather than the -1 of the JSON form).
func streamLine(s messages.StreamHealth) string {
	if !s.Open {
		return "not running (no stream for this user here)"
	}
	state := "connected"
	switch {
	case s.Flapping:
		state = fmt.Sprintf("flapping (reconnecting again and again; unhealthy for %.1fs)", s.DownForS)
	case !s.Connected:
		state = fmt.Sprintf("down for %.1fs", s.DownForS)
	}
	if s.LastMessageAgeS < 0 {
		return state + ", no message yet"
	}
	return fmt.Sprintf("%s, last message %.1fs ago", state, s.LastMessageAgeS)
}
