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
	Action string `arg:"" enum:"show,reduce,resume" help:"show; reduce (only risk-reducing actions go through); resume (lift the human REDUCING)"`
	JSON   bool   `name:"json" help:"print JSON"`
}

// Run runs posture.
func (c *PostureCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	var cmd messages.Command = &messages.ShowPostureRequest{User: g.User}
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
	fmt.Fprintf(w, "  stream open=%v connected=%v last message %.1fs ago\n", v.Stream.Open, v.Stream.Connected, v.Stream.LastMessageAgeS)
}
