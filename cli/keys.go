package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// KeysCmd is `keys`: the user's exchange key for the venue (--venue).
type KeysCmd struct {
	Add     KeysAddCmd     `cmd:"" help:"Store an exchange key; it is checked with the exchange first. Read from the terminal without echo, or as two lines (key, then secret) from stdin."`
	Show    KeysShowCmd    `cmd:"" help:"Show the stored key's id, fingerprint and permissions (never the secret)."`
	Replace KeysReplaceCmd `cmd:"" help:"Replace the stored key (read like keys add)."`
	Delete  KeysDeleteCmd  `cmd:"" help:"Delete the stored key; asks first unless --yes."`
}

// KeysAddCmd is `keys add`.
type KeysAddCmd struct {
	AdminAttest bool `name:"admin-attest" help:"admin only: accept a key whose permissions cannot be checked now (paper and demo only; journaled)"`
	JSON        bool `name:"json" help:"print JSON"`
}

// Run runs keys add.
func (c *KeysAddCmd) Run(ctx context.Context, g *Globals, rt Runtime, o IO) error {
	return addKey(ctx, g, rt, o, false, c.AdminAttest, c.JSON)
}

// KeysReplaceCmd is `keys replace`.
type KeysReplaceCmd struct {
	AdminAttest bool `name:"admin-attest" help:"admin only: accept a key whose permissions cannot be checked now (paper and demo only; journaled)"`
	JSON        bool `name:"json" help:"print JSON"`
}

// Run runs keys replace.
func (c *KeysReplaceCmd) Run(ctx context.Context, g *Globals, rt Runtime, o IO) error {
	return addKey(ctx, g, rt, o, true, c.AdminAttest, c.JSON)
}

// KeysShowCmd is `keys show`.
type KeysShowCmd struct {
	JSON bool `name:"json" help:"print JSON"`
}

// Run runs keys show.
func (c *KeysShowCmd) Run(ctx context.Context, g *Globals, rt Runtime, o IO) error {
	return deliverAndPrint(ctx, g, rt, o, &messages.ShowCredentialRequest{User: g.User, Environment: g.Venue}, c.JSON)
}

// KeysDeleteCmd is `keys delete`.
type KeysDeleteCmd struct {
	Yes  bool `help:"do not ask"`
	JSON bool `name:"json" help:"print JSON"`
}

// Run runs keys delete.
func (c *KeysDeleteCmd) Run(ctx context.Context, g *Globals, rt Runtime, o IO) error {
	if err := confirm(o, fmt.Sprintf("Delete the %s key of %s?", g.Venue, g.User), c.Yes); err != nil {
		return err
	}
	if err := deliverAndPrint(ctx, g, rt, o, &messages.DeleteCredentialRequest{User: g.User, Environment: g.Venue}, c.JSON); err != nil {
		return err
	}
	fmt.Fprintln(o.Err, "Revoke the key on the exchange too: the journal keeps its sealed copy (it is append-only).")
	return nil
}

// maxSecretLine bounds one line read from stdin.
const maxSecretLine = 8 << 10

// addKey reads the key and the secret (never from arguments or the
// environment) and sends them to the user actor.
func addKey(ctx context.Context, g *Globals, rt Runtime, o IO, replace, attest, asJSON bool) error {
	apiKey, secret, err := readKeyAndSecret(o)
	if err != nil {
		return err
	}
	return deliverAndPrint(ctx, g, rt, o, &messages.AddCredentialRequest{
		User: g.User, Environment: g.Venue, APIKey: apiKey, APISecret: messages.NewSecret(secret), Replace: replace, AdminAttest: attest,
	}, asJSON)
}

// readHidden prompts on w and reads one line from the terminal f without
// echo. Echo is off before the prompt shows, so fast typing is never
// echoed either.
func readHidden(f *os.File, w io.Writer, prompt string) (string, error) {
	fd := int(f.Fd())
	restore, err := echoOff(fd)
	if err != nil {
		return "", err
	}
	defer restore()
	fmt.Fprint(w, prompt)
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(w)
	return strings.TrimSpace(string(b)), err
}

// readKeyAndSecret reads from the terminal without echo, or, when stdin is
// not a terminal, two lines (key, then secret) through one buffered reader
// (two readers on a pipe would lose the second line).
func readKeyAndSecret(o IO) (string, string, error) {
	if f, ok := o.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		k, err := readHidden(f, o.Err, "API key: ")
		if err != nil {
			return "", "", Refused("cannot read the key: %v", err)
		}
		s, err := readHidden(f, o.Err, "API secret: ")
		if err != nil {
			return "", "", Refused("cannot read the secret: %v", err)
		}
		return k, s, nil
	}
	if o.In == nil {
		return "", "", Refused("no stdin: type the key and the secret, or pipe them as two lines")
	}
	r := bufio.NewReaderSize(o.In, maxSecretLine)
	line := func(what string) (string, error) {
		l, err := r.ReadString('\n')
		if err != nil && !(errors.Is(err, io.EOF) && l != "") {
			return "", Refused("stdin ended before the %s (give two lines: key, then secret)", what)
		}
		return strings.TrimSpace(l), nil
	}
	k, err := line("API key")
	if err != nil {
		return "", "", err
	}
	s, err := line("API secret")
	if err != nil {
		return "", "", err
	}
	if k == "" || s == "" {
		return "", "", Refused("the key and the secret must not be empty")
	}
	return k, s, nil
}

func printCredential(w io.Writer, v *messages.CredentialView) {
	if !v.Present {
		fmt.Fprintf(w, "no %s key stored for %s\n", v.Environment, v.User)
		if v.Changed {
			fmt.Fprintln(w, "deleted (journaled)")
		}
		return
	}
	fmt.Fprintf(w, "%s key of %s: %s (id %s)\n", v.Environment, v.User, v.Fingerprint, v.CredentialID)
	// The permission names are the exchange's answer.
	fmt.Fprintf(w, "permissions: %s\n", messages.Printable(orDash(strings.Join(v.Permissions, ", "))))
	if v.ReadOnlyCap {
		fmt.Fprintln(w, "this key can only read: the user is capped at read_only")
	}
	if v.Attested {
		fmt.Fprintln(w, "permissions not verified: accepted on the admin's attestation")
	}
	if v.PermissionsChanged {
		fmt.Fprintf(w, "PERMISSIONS CHANGED (%s): trading is blocked until the key is replaced\n", messages.Printable(strings.Join(v.Offending, ", ")))
	}
	if !v.CheckedAt.IsZero() {
		fmt.Fprintf(w, "last checked %s\n", v.CheckedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if v.Changed {
		fmt.Fprintln(w, "stored (journaled; the secret is sealed and never printed)")
	}
}
