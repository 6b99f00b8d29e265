package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// ConfirmCmd is `confirm`: a human decides the actions parked for
// confirmation, over the control socket of the running server (docs/tools.md "Confirmation",
// channel 2). The server accepts decisions only when it runs with
// GX_CONFIRM_CLI_ENABLED=true, from its own uid or an approver uid.
type ConfirmCmd struct {
	List    ConfirmListCmd    `cmd:"" help:"What waits for a decision: exactly what will be executed, external orders marked."`
	Approve ConfirmApproveCmd `cmd:"" help:"Print the server's plan of a parked action, ask, then approve it; the server executes it at once."`
	Reject  ConfirmRejectCmd  `cmd:"" help:"Reject a parked action; nothing is sent."`
}

// ConfirmListCmd is `confirm list`.
type ConfirmListCmd struct {
	All    bool   `help:"also the decided, expired and cancelled ones of the last 24 h"`
	Format string `default:"table" enum:"table,json" help:"table or json"`
}

// Run lists the user's confirmations.
func (c *ConfirmListCmd) Run(ctx context.Context, g *Globals, rt Runtime, o IO) error {
	res, err := rt.Deliver(ctx, g, &messages.ListConfirmationsCommand{User: g.User, All: c.All})
	if err != nil {
		return refusal(err)
	}
	list, ok := res.(*messages.ConfirmationList)
	if !ok {
		return refusal(fmt.Errorf("unexpected answer %T", res))
	}
	if c.Format == "json" {
		b, err := json.Marshal(list)
		if err != nil {
			return refusal(err)
		}
		_, err = fmt.Fprintf(o.Out, "%s\n", messages.PrintableJSON(b))
		return err
	}
	if len(list.Confirmations) == 0 {
		_, err := fmt.Fprintf(o.Out, "nothing waits for a decision (user %s)\n", messages.Printable(list.User))
		return err
	}
	for _, st := range list.Confirmations {
		printPlan(o.Out, &st)
		fmt.Fprintln(o.Out)
	}
	return nil
}

// ConfirmApproveCmd is `confirm approve ID`.
type ConfirmApproveCmd struct {
	ID   string `arg:"" help:"the confirmation id (cf_...)"`
	Yes  bool   `help:"do not ask"`
	JSON bool   `name:"json" help:"print the executed action's answer as JSON"`
}

// Run prints the plan, asks, approves, and prints what was executed. The
// server must run: an approval executes at once, and only the server may
// send. The plan is read and the decision sent over one connection.
func (c *ConfirmApproveCmd) Run(ctx context.Context, g *Globals, rt Runtime, o IO) error {
	if e := messages.CheckConfirmationID(c.ID); e != nil {
		return refusal(e)
	}
	conn, err := rt.DialServer(ctx, g)
	if err != nil {
		return refusal(err)
	}
	defer func() { conn.Close() }()
	res, err := conn.Send(ctx, &messages.ConfirmationStatusCommand{User: g.User, ConfirmationID: c.ID})
	if err != nil {
		return refusal(err)
	}
	st, ok := res.(*messages.ConfirmationStatus)
	if !ok {
		return refusal(fmt.Errorf("unexpected answer %T", res))
	}
	printPlan(o.Err, st)
	if st.Status != messages.ConfirmStatusPending {
		return Refused("confirmation %s is %s, not pending: nothing to approve", c.ID, st.Status)
	}
	release := conn.Hold()
	asked := confirm(o, "Approve and execute exactly this now?", c.Yes)
	if lost := release(); lost != nil && asked == nil {
		// The connection broke while the human read the plan: nothing was
		// decided on it, so the decision goes over a new one.
		conn.Close()
		if conn, err = rt.DialServer(ctx, g); err != nil {
			return refusal(err)
		}
	}
	if asked != nil {
		return asked
	}
	return decide(ctx, conn, o, g.User, c.ID, messages.DecisionApprove, c.JSON)
}

// ConfirmRejectCmd is `confirm reject ID`.
type ConfirmRejectCmd struct {
	ID   string `arg:"" help:"the confirmation id (cf_...)"`
	JSON bool   `name:"json" help:"print JSON"`
}

// Run rejects the confirmation.
func (c *ConfirmRejectCmd) Run(ctx context.Context, g *Globals, rt Runtime, o IO) error {
	if e := messages.CheckConfirmationID(c.ID); e != nil {
		return refusal(e)
	}
	conn, err := rt.DialServer(ctx, g)
	if err != nil {
		return refusal(err)
	}
	defer conn.Close()
	return decide(ctx, conn, o, g.User, c.ID, messages.DecisionReject, c.JSON)
}

// approveWait bounds the wait for an approval's answer: the server
// answers once the approved action ran (messages.DecisionAnswerWait),
// plus the way over the control socket.
const approveWait = messages.DecisionAnswerWait + 15*time.Second

// decide sends the decision over conn and prints its answer.
func decide(ctx context.Context, conn ServerConn, o IO, user, id, decision string, asJSON bool) error {
	if decision == messages.DecisionApprove {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, approveWait)
		defer cancel()
	}
	res, err := conn.Send(ctx, &messages.DecideConfirmationCommand{User: user, ConfirmationID: id, Decision: decision,
		Channel: messages.ConfirmChannelCLI})
	if err != nil {
		if decision == messages.DecisionApprove && outcomeUnknown(err) {
			return refusal(fmt.Errorf("%w; whether approval %s was executed is NOT known: the order may have gone out. "+
				"Do not approve or place it again; check with `guarded-exchange confirm list --all` (status executing, executed or failed)", err, id))
		}
		return refusal(err)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return refusal(err)
	}
	raw = messages.PrintableJSON(raw)
	if asJSON {
		_, err = fmt.Fprintf(o.Out, "%s\n", raw)
		return err
	}
	var probe struct {
		Status        string `json:"status"`
		ClientOrderID string `json:"client_order_id"`
		OrderID       string `json:"order_id"`
	}
	_ = json.Unmarshal(raw, &probe)
	if decision == messages.DecisionReject {
		_, err = fmt.Fprintf(o.Out, "rejected %s: nothing was sent\n", id)
		return err
	}
	_, err = fmt.Fprintf(o.Out, "approved %s: executed, status %s", id, messages.Printable(probe.Status))
	if probe.OrderID != "" {
		fmt.Fprintf(o.Out, ", order %s", messages.Printable(probe.OrderID))
	}
	if probe.ClientOrderID != "" {
		fmt.Fprintf(o.Out, ", client order id %s", messages.Printable(probe.ClientOrderID))
	}
	fmt.Fprintf(o.Out, "\n%s\n", raw)
	return err
}

// printPlan prints what the human approves: the server's own plan, never
// the model's words. Text that came from the exchange (order ids, an
// error's message) or through the server from anywhere else passes
// through messages.Printable: it cannot act on the terminal.
func printPlan(w io.Writer, st *messages.ConfirmationStatus) {
	p := messages.Printable
	fmt.Fprintf(w, "%s  %s  %s  (user %s, channel %s, expires %s)\n", p(st.ConfirmationID), p(st.Status), p(st.Tool), p(st.User), p(st.Channel),
		st.ExpiresAt.Format("15:04:05Z07:00"))
	s := st.ShownToUser
	if s == nil {
		return
	}
	fmt.Fprintf(w, "  venue %s: %s\n", p(s.Venue), p(s.Summary))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch {
	case s.Order != nil:
		o := s.Order
		fmt.Fprintf(tw, "  side\t%s\n  qty (after rounding)\t%s (asked %s)\n  sent as\t%s\n  price\t%s\n  value up to\t%s USDT\n  reduce-only\t%v\n  risk-increasing\t%v\n",
			p(o.Side), o.Qty, o.RequestedQty, p(o.SentAs), o.Price, o.NotionalUSDT.StringFixed(2), o.ReduceOnly, o.RiskIncreasing)
		if l := o.LowersLeverage; l != nil {
			fmt.Fprintf(tw, "  first\tlowers the leverage from %sx to %sx\n", l.From, l.To)
		}
	case s.Cancel != nil:
		fmt.Fprintf(tw, "  order\t%s\n  origin\t%s\n", p(s.Cancel.OrderID), originText(s.Cancel.Origin))
	case s.Amend != nil:
		a := s.Amend
		fmt.Fprintf(tw, "  order\t%s\n  origin\t%s\n  new qty\t%s\n  new price\t%s\n  value up to\t%s USDT\n", p(a.OrderID), originText(a.Origin), a.Qty, a.Price, a.NotionalUSDT.StringFixed(2))
	case s.CancelAll != nil:
		fmt.Fprintf(tw, "  ORDER\tORIGIN\n")
		for _, r := range s.CancelAll.Orders {
			fmt.Fprintf(tw, "  %s\t%s\n", p(r.OrderID), originText(r.Origin))
		}
	case s.Leverage != nil:
		fmt.Fprintf(tw, "  leverage\t%sx (now %sx)\n", s.Leverage.Leverage, s.Leverage.Previous)
	}
	tw.Flush()
	if st.Error != nil {
		fmt.Fprintf(w, "  error: %s: %s\n", p(string(st.Error.Code)), p(st.Error.Message))
	}
}

// originText marks the orders this server did not place.
func originText(origin string) string {
	if origin == messages.OriginSystem {
		return "placed by this server"
	}
	return strings.ToUpper(messages.Printable(origin)) + " (not placed by this server)"
}

// outcomeUnknown reports whether an approval's failure leaves open
// whether the action ran: no answer came (timeout, a dropped
// connection), or the server itself says so. A refusal (not pending,
// not allowed, ...) is a clear answer: nothing ran.
func outcomeUnknown(err error) bool {
	var ee *ExitError
	if errors.As(err, &ee) {
		return false // refused before anything was sent (no server, ...)
	}
	var me *messages.Error
	if !errors.As(err, &me) {
		return true
	}
	// details.served "unknown": the cluster member serving the shard went
	// away during the call (docs/decisions.md D189).
	return me.Code == messages.CodeOutcomeUnknown || me.Code == messages.CodeInternalError || me.Details["served"] == "unknown"
}
