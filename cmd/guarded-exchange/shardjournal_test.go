package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// writeShardTurn appends records to the shard journal in dir as the owner
// of epoch (docs/cluster.md): each record a version 2 frame carrying it.
func writeShardTurn(t *testing.T, dir string, epoch uint64, types ...messages.RecordType) {
	t.Helper()
	l, _, err := wal.Open(dir, wal.Options{Epoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, typ := range types {
		if _, err := l.Append([]wal.Entry{{Type: uint16(typ), Actor: messages.ActorSystem, Payload: []byte(`{"shard":3}`)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// journal verify passes a clean handover between two shard owners and
// reports, at its seq, a record of an epoch that no shard_owner record
// opened: it knows the owner record's type.
func TestJournalVerifyShardOwners(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	in := install{home: filepath.Join(root, "home"), key: filepath.Join(root, "config", "master.key")}

	clean := filepath.Join(root, "clean")
	writeShardTurn(t, clean, 5, messages.RecordShardOwner, messages.RecordToolCall)
	writeShardTurn(t, clean, 9, messages.RecordShardOwner, messages.RecordToolCall)
	if r := run(t, in.env(), "", "journal", "verify", "--dir", clean); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: 4 records") {
		t.Fatalf("clean handover: exit %d %q %q", r.code, r.stdout, r.stderr)
	}

	bad := filepath.Join(root, "bad")
	writeShardTurn(t, bad, 5, messages.RecordShardOwner, messages.RecordToolCall)
	writeShardTurn(t, bad, 9, messages.RecordToolCall)
	r := run(t, in.env(), "", "journal", "verify", "--dir", bad)
	if r.code == 0 || !strings.Contains(r.stderr, "seq 3: "+wal.ReasonEpochUnowned) {
		t.Fatalf("unowned epoch: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}
