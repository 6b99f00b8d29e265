package app

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// paperHome is an initialised home on the paper venue.
func paperHome(t testing.TB) (*Runtime, *cli.Globals) {
	t.Helper()
	root := t.TempDir()
	g := &cli.Globals{Home: filepath.Join(root, "home"), MasterKeyFile: filepath.Join(root, "cfg", "master.key"), User: "local", Venue: "paper"}
	r := &Runtime{Getenv: func(string) string { return "" }}
	var out strings.Builder
	if err := r.Init(context.Background(), g, cli.IO{Out: &out, Err: io.Discard}); err != nil {
		t.Fatalf("init: %v", err)
	}
	if !strings.Contains(out.String(), "stored the paper key fp_") {
		t.Fatalf("init did not store a paper key: %q", out.String())
	}
	return r, g
}

// The embedded venue learns every stored paper key at start: a key an
// admin added for a later user works in the next process, and another
// user cannot take it over with another secret; a new key opens a new
// paper account with the starting wallet.
func TestPaperVenueLearnsStoredKeysAtStart(t *testing.T) {
	r, g := paperHome(t)
	ctx := context.Background()
	deliver := func(cmd messages.Command) error {
		t.Helper()
		_, err := r.Deliver(ctx, g, cmd)
		return err
	}
	bobKey := sim.Key{APIKey: "BOBPAPERKEY0000001", APISecret: "bob-paper-secret-0000000000000000001"}
	for _, u := range []string{"bob", "carol"} {
		if err := deliver(&messages.CreateUserRequest{User: u}); err != nil {
			t.Fatal(err)
		}
	}
	if err := deliver(&messages.AddCredentialRequest{User: "bob", Environment: "paper", APIKey: bobKey.APIKey, APISecret: messages.NewSecret(bobKey.APISecret)}); err != nil {
		t.Fatalf("keys add for a later user: %v", err)
	}
	// A fresh process: carol offers bob's key with another secret.
	err := deliver(&messages.AddCredentialRequest{User: "carol", Environment: "paper", APIKey: bobKey.APIKey, APISecret: messages.NewSecret("not-bobs-secret")})
	if messages.CodeOf(err) != messages.CodeExchangeCredentialsInvalid {
		t.Fatalf("another secret for a stored key: %v", err)
	}

	st := openStack(t, r, g, "cli").st
	if st.paper.Sim().DefaultKey() != (sim.Key{}) {
		t.Fatal("the embedded venue has a pre-provisioned key")
	}
	for _, u := range []string{"local", "bob"} {
		res, err := st.sys.Account(ctx, &messages.GetBalancesRequest{User: u})
		if err != nil {
			t.Fatalf("balances of %s: %v", u, err)
		}
		wb := res.(*messages.WalletBalance)
		if len(wb.Coins) != 1 || wb.Coins[0].Coin != "USDT" || !wb.Coins[0].WalletBalance.Equal(decimal.NewFromInt(paperStartingUSDT)) {
			t.Fatalf("wallet of %s: %+v", u, wb.Coins)
		}
	}
	if _, err := st.sys.Account(ctx, &messages.GetBalancesRequest{User: "carol"}); messages.CodeOf(err) == "" {
		t.Fatal("carol has a paper key")
	}
}

// Paper keys are random: two installations never share one, and the key
// material has the shape and alphabet of a Bybit key.
func TestNewPaperKeyIsRandom(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		k, err := newPaperKey()
		if err != nil {
			t.Fatal(err)
		}
		if len(k.APIKey) != paperKeyLen || len(k.APISecret) != paperSecretLen {
			t.Fatalf("lengths %d/%d", len(k.APIKey), len(k.APISecret))
		}
		for _, c := range k.APIKey + k.APISecret {
			if !strings.ContainsRune(alnum, c) {
				t.Fatalf("character %q outside the alphabet", c)
			}
		}
		if seen[k.APIKey] || seen[k.APISecret] {
			t.Fatal("a paper key repeated")
		}
		seen[k.APIKey], seen[k.APISecret] = true, true
	}
}

// A damaged paper state file refuses the start, naming the file, and is
// left as it was: nothing but `paper reset` starts a paper account over.
func TestDamagedPaperStateRefusesStart(t *testing.T) {
	r, g := paperHome(t)
	p, err := resolvePaths(g)
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(p.paperState())
	if err != nil {
		t.Fatalf("init left no paper state: %v", err)
	}
	damaged := good[:len(good)/2]
	if err := os.WriteFile(p.paperState(), damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = r.Deliver(context.Background(), g, &messages.PaperStatusRequest{User: "local"})
	if err == nil || !strings.Contains(err.Error(), p.paperState()) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a damaged state file: %v", err)
	}
	if now, _ := os.ReadFile(p.paperState()); !bytes.Equal(now, damaged) {
		t.Fatal("the damaged state file was rewritten")
	}
}

// A stored paper key whose account the state file does not hold (the file
// was lost, or the home predates it) starts with the opening wallet, and
// the log says so at warn level, naming the user and the file.
func TestLostPaperStateIsLogged(t *testing.T) {
	r, g := paperHome(t)
	p, err := resolvePaths(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p.paperState()); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	r.Logger = slog.New(slog.NewJSONHandler(&log, nil))
	res, err := r.Deliver(context.Background(), g, &messages.PaperStatusRequest{User: "local"})
	if err != nil {
		t.Fatal(err)
	}
	if v := res.(*messages.PaperAccountView); len(v.Balances) != 1 || !v.Balances[0].WalletBalance.Equal(decimal.NewFromInt(paperStartingUSDT)) {
		t.Fatalf("the account of a lost state: %+v", v)
	}
	line := ""
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, `"level":"WARN"`) && strings.Contains(l, "opening wallet") {
			line = l
		}
	}
	if !strings.Contains(line, `"user":"local"`) || !strings.Contains(line, p.paperState()) {
		t.Fatalf("no warning names the user and the state file:\n%s", log.String())
	}
	// The next start finds the account it wrote: no warning again.
	log.Reset()
	if _, err := r.Deliver(context.Background(), g, &messages.PaperStatusRequest{User: "local"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "opening wallet") {
		t.Fatalf("a stored account was warned about:\n%s", log.String())
	}
}
