package app

import (
	"context"
	"fmt"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// journalDir is --dir or <home>/journal. It needs no master key.
func journalDir(g *cli.Globals, dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	p, err := resolvePaths(g)
	if err != nil {
		return "", err
	}
	return p.journal(), nil
}

// snapshotJournal copies the journal so that reading never disturbs a
// running server (docs/commands.md).
func snapshotJournal(g *cli.Globals, dir string) (string, func(), error) {
	d, err := journalDir(g, dir)
	if err != nil {
		return "", nil, cli.CannotStart("%v", err)
	}
	cp, cleanup, err := wal.Snapshot(d)
	if err != nil {
		return "", nil, cli.CannotStart("journal %s: %v", d, err)
	}
	return cp, cleanup, nil
}

func typeName(t uint16) string { return messages.RecordType(t).String() }

// JournalDump prints records (docs/commands.md).
func (r *Runtime) JournalDump(_ context.Context, g *cli.Globals, o cli.DumpOptions, out cli.IO) error {
	var types []uint16
	for _, name := range o.Types {
		t, ok := messages.RecordTypeByName(name)
		if !ok {
			return &cli.ExitError{Code: cli.ExitCannot, Err: fmt.Errorf("unknown record type %q", name)}
		}
		types = append(types, uint16(t))
	}
	cp, cleanup, err := snapshotJournal(g, o.Dir)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := wal.Dump(out.Out, cp, wal.DumpOptions{
		User: o.User, Types: types, Since: o.Since, Until: o.Until, Format: o.Format, TypeName: typeName,
	}); err != nil {
		return cli.Refused("journal dump: %v", err)
	}
	return nil
}

// JournalVerify checks the chain: exit 0 when it holds, 1 with the first bad
// seq on stderr otherwise.
func (r *Runtime) JournalVerify(_ context.Context, g *cli.Globals, dir, expectHead string, out cli.IO) error {
	cp, cleanup, err := snapshotJournal(g, dir)
	if err != nil {
		return err
	}
	defer cleanup()
	res, err := wal.VerifyWith(cp, wal.VerifyOptions{ExpectHead: expectHead, OwnerType: uint16(messages.RecordShardOwner)})
	if err != nil {
		return &cli.ExitError{Code: cli.ExitCannot, Err: fmt.Errorf("journal verify: %w", err)}
	}
	if len(res.Problems) > 0 {
		for _, pr := range res.Problems {
			fmt.Fprintf(out.Err, "seq %d: %s (segment %s)\n", pr.Seq, pr.Reason, pr.Segment)
		}
		first := res.Problems[0]
		return cli.Refused("journal verify: chain broken at seq %d: %s", first.Seq, first.Reason)
	}
	fmt.Fprintf(out.Out, "ok: %d records, head %s\n", res.Records, res.Head)
	return nil
}

// JournalHead prints SEQ:HASH of the last record.
func (r *Runtime) JournalHead(_ context.Context, g *cli.Globals, dir string, out cli.IO) error {
	cp, cleanup, err := snapshotJournal(g, dir)
	if err != nil {
		return err
	}
	defer cleanup()
	res, err := wal.Verify(cp, "")
	if err != nil {
		return &cli.ExitError{Code: cli.ExitCannot, Err: fmt.Errorf("journal head: %w", err)}
	}
	fmt.Fprintln(out.Out, res.Head.String())
	if len(res.Problems) > 0 {
		return cli.Refused("journal head: the chain is broken at seq %d; run `guarded-exchange journal verify`", res.Problems[0].Seq)
	}
	return nil
}
