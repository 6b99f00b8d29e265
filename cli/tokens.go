package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// AdminTokenCmd is `admin token`: the bearer tokens of remote mode.
type AdminTokenCmd struct {
	Issue  AdminTokenIssueCmd  `cmd:"" help:"Issue a bearer token for --user; it is printed once, with its id."`
	Revoke AdminTokenRevokeCmd `cmd:"" help:"Revoke a token by its id; its next request is refused."`
	List   AdminTokenListCmd   `cmd:"" help:"List the token ids of --user (never the tokens)."`
}

// AdminTokenIssueCmd is `admin token issue --user U`.
type AdminTokenIssueCmd struct {
	JSON bool `name:"json" help:"print {\"id\", \"token\"} as JSON"`
}

// Run runs admin token issue. The token is printed once: the server keeps
// only its SHA-256.
func (c *AdminTokenIssueCmd) Run(ctx context.Context, kctx *kong.Context, g *Globals, rt Runtime, io IO) error {
	if !userFlagGiven(kctx.Args) {
		return &ExitError{Code: ExitCannot, Err: errors.New("admin token issue needs --user")}
	}
	res, err := rt.Deliver(ctx, g, &messages.IssueTokenRequest{User: g.User})
	if err != nil {
		return refusal(err)
	}
	t, ok := res.(*messages.TokenIssued)
	if !ok {
		return refusal(fmt.Errorf("unexpected answer %T", res))
	}
	if c.JSON {
		b, err := json.Marshal(struct {
			ID    string `json:"id"`
			Token string `json:"token"`
		}{t.ID, t.Token})
		if err != nil {
			return refusal(err)
		}
		_, err = fmt.Fprintf(io.Out, "%s\n", b)
		return err
	}
	_, err = fmt.Fprintf(io.Out, "token id: %s\nuser: %s\ntoken: %s\nThe token is shown only now; the server keeps only its SHA-256. Give it to the client as `Authorization: Bearer <token>`; revoke it with `guarded-exchange admin token revoke %s`.\n",
		t.ID, t.User, t.Token, t.ID)
	return err
}

// AdminTokenRevokeCmd is `admin token revoke ID`.
type AdminTokenRevokeCmd struct {
	ID   string `arg:"" help:"token id (tok_...)"`
	JSON bool   `name:"json" help:"print JSON"`
}

// Run runs admin token revoke.
func (c *AdminTokenRevokeCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return deliverTokens(ctx, g, rt, io, &messages.RevokeTokenRequest{ID: c.ID}, c.JSON)
}

// AdminTokenListCmd is `admin token list --user U`.
type AdminTokenListCmd struct {
	JSON bool `name:"json" help:"print JSON"`
}

// Run runs admin token list.
func (c *AdminTokenListCmd) Run(ctx context.Context, kctx *kong.Context, g *Globals, rt Runtime, io IO) error {
	if !userFlagGiven(kctx.Args) {
		return &ExitError{Code: ExitCannot, Err: errors.New("admin token list needs --user")}
	}
	return deliverTokens(ctx, g, rt, io, &messages.ListTokensRequest{User: g.User}, c.JSON)
}

func deliverTokens(ctx context.Context, g *Globals, rt Runtime, io IO, cmd messages.Command, asJSON bool) error {
	res, err := rt.Deliver(ctx, g, cmd)
	if err != nil {
		return refusal(err)
	}
	l, ok := res.(*messages.TokenList)
	if !ok {
		return refusal(fmt.Errorf("unexpected answer %T", res))
	}
	if asJSON {
		b, err := json.Marshal(l)
		if err != nil {
			return refusal(err)
		}
		_, err = fmt.Fprintf(io.Out, "%s\n", b)
		return err
	}
	fmt.Fprintf(io.Out, "user %s\n", l.User)
	if l.Changed {
		fmt.Fprintln(io.Out, "changed (journaled)")
	}
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tISSUED\tREVOKED")
	for _, t := range l.Tokens {
		rev := "-"
		if t.Revoked {
			rev = t.RevokedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.ID, t.IssuedAt.UTC().Format(time.RFC3339), rev)
	}
	return tw.Flush()
}
