package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// PaperCmd groups the paper account's commands: the embedded simulator's
// account of a user lasts across restarts and starts over only here.
type PaperCmd struct {
	Status PaperStatusCmd `cmd:"" help:"The paper account at a glance: balance, open orders, positions."`
	Reset  PaperResetCmd  `cmd:"" help:"Start the paper account over with its opening balance; prints what will be lost and asks unless --yes."`
}

// PaperStatusCmd is `paper status [--user U] [--format table|json]`.
type PaperStatusCmd struct {
	Format string `default:"table" enum:"table,json" help:"table or json"`
}

// Run shows the user's paper account.
func (c *PaperStatusCmd) Run(ctx context.Context, g *Globals, rt Runtime, o IO) error {
	v, err := deliverPaper(ctx, g, rt, &messages.PaperStatusRequest{User: g.User})
	if err != nil {
		return err
	}
	if c.Format == "json" {
		return printPaperJSON(o.Out, v)
	}
	printPaperAccount(o.Out, v)
	return nil
}

// PaperResetCmd is `paper reset [--user U] [--yes]`.
type PaperResetCmd struct {
	Yes    bool   `help:"do not ask (needed when stdin is not a terminal)"`
	Format string `default:"table" enum:"table,json" help:"table or json"`
}

// errPaperResetNoTerminal is the refusal of a reset without --yes whose
// stdin cannot ask a human.
const errPaperResetNoTerminal = "paper reset asks before it drops the paper account, and stdin is not a terminal: run it in a terminal, or pass --yes; nothing was reset"

// Run prints what will be lost, asks, then resets the user's paper account.
func (c *PaperResetCmd) Run(ctx context.Context, g *Globals, rt Runtime, o IO) error {
	if !c.Yes {
		if f, ok := o.In.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
			return Refused(errPaperResetNoTerminal)
		}
		v, err := deliverPaper(ctx, g, rt, &messages.PaperStatusRequest{User: g.User})
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "paper reset drops this account and starts it over with %s USDT:\n", v.OpeningUSDT)
		printPaperAccount(o.Out, v)
		if err := confirm(o, "Reset the paper account?", false); err != nil {
			return err
		}
	}
	v, err := deliverPaper(ctx, g, rt, &messages.PaperResetRequest{User: g.User})
	if err != nil {
		return err
	}
	if c.Format == "json" {
		return printPaperJSON(o.Out, v)
	}
	fmt.Fprintf(o.Out, "paper account of %s reset to %s USDT (journaled); dropped:\n", messages.Printable(v.User), v.OpeningUSDT)
	printPaperAccount(o.Out, v)
	return nil
}

// deliverPaper sends a paper command and returns its answer.
func deliverPaper(ctx context.Context, g *Globals, rt Runtime, cmd messages.Command) (*messages.PaperAccountView, error) {
	res, err := rt.Deliver(ctx, g, cmd)
	if err != nil {
		return nil, refusal(err)
	}
	v, ok := res.(*messages.PaperAccountView)
	if !ok {
		return nil, refusal(fmt.Errorf("unexpected answer %T", res))
	}
	return v, nil
}

func printPaperJSON(w io.Writer, v *messages.PaperAccountView) error {
	b, err := json.Marshal(v)
	if err != nil {
		return refusal(err)
	}
	_, err = fmt.Fprintf(w, "%s\n", messages.PrintableJSON(b))
	return err
}

// printPaperAccount prints the account's wallet, open orders and positions.
// Order link ids are the client's text: printed as data, made printable.
func printPaperAccount(w io.Writer, v *messages.PaperAccountView) {
	fmt.Fprintf(w, "paper account of %s\n", messages.Printable(v.User))
	if len(v.Balances) == 0 {
		fmt.Fprintln(w, "  balance: none")
	}
	for _, b := range v.Balances {
		fmt.Fprintf(w, "  balance %-6s %s\n", messages.Printable(b.Coin), b.WalletBalance)
	}
	fmt.Fprintf(w, "  open orders: %d\n", len(v.OpenOrders))
	for _, o := range v.OpenOrders {
		fmt.Fprintf(w, "    %s %s %s %s %s @ %s (left %s) %s id %s link %q\n",
			messages.Printable(o.Category), messages.Printable(o.Symbol), messages.Printable(o.Side), messages.Printable(o.OrderType),
			o.Qty, o.Price, o.LeavesQty, messages.Printable(o.Status), messages.Printable(o.OrderID), messages.Printable(o.OrderLinkID))
	}
	fmt.Fprintf(w, "  positions: %d\n", len(v.Positions))
	for _, p := range v.Positions {
		fmt.Fprintf(w, "    %s %s %s @ %s leverage %s TP %s SL %s realised %s\n",
			messages.Printable(p.Symbol), messages.Printable(p.Side), p.Size, p.AvgPrice, p.Leverage, p.TakeProfit, p.StopLoss, p.CumRealisedPnl)
	}
}
