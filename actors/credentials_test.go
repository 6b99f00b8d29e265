package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/internal/testkit/rig"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// keyEnv is a user system wired to a real simulator (funded), with a
// master key and a settable clock.
type keyEnv struct {
	*testSystem
	masterKey []byte
	mu        sync.Mutex
	now       time.Time
}

func (k *keyEnv) clock() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.now
}

func (k *keyEnv) advance(d time.Duration) {
	k.mu.Lock()
	k.now = k.now.Add(d)
	k.mu.Unlock()
}

func newKeyEnv(t *testing.T, dir string, master []byte) *keyEnv {
	t.Helper()
	ke := &keyEnv{now: time.Now().UTC(), masterKey: master}
	ke.testSystem = startStack(t, stack{Dir: dir, MasterKey: master, SimOptions: funded, Configure: func(c *Config) { c.Now = ke.clock }})
	return ke
}

func randomKey(t *testing.T) []byte {
	return rig.NewKey(t)
}

// simKey creates a key on the simulator with the given permissions.
func (k *keyEnv) simKey(t *testing.T, readOnly bool, perms map[string][]string) sim.Key {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"read_only": readOnly, "permissions": perms})
	resp, err := http.Post(k.sim.URL+"/sim/keys", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		APIKey    string `json:"api_key"`
		APISecret string `json:"api_secret"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	return sim.Key{APIKey: out.APIKey, APISecret: out.APISecret}
}

func (k *keyEnv) add(t *testing.T, user string, key sim.Key, replace bool) (*messages.CredentialView, error) {
	t.Helper()
	res, err := k.Handle(context.Background(), &messages.AddCredentialRequest{
		User: user, Environment: "paper", APIKey: key.APIKey, APISecret: messages.NewSecret(key.APISecret), Replace: replace,
	}, messages.ActorCLIUser)
	if err != nil {
		return nil, err
	}
	return res.(*messages.CredentialView), nil
}

var tradePerms = map[string][]string{"ContractTrade": {"Order", "Position"}, "Spot": {"SpotTrade"}}

func TestAddKeyChecksPermissionsAndSeals(t *testing.T) {
	ke := newKeyEnv(t, t.TempDir(), randomKey(t))
	ke.must(t, &messages.CreateUserRequest{User: "kim"}, messages.ActorCLIAdmin)

	// A key that can move funds is refused, naming the permission.
	bad := ke.simKey(t, false, map[string][]string{"ContractTrade": {"Order"}, "Wallet": {"AccountTransfer", "Withdraw"}})
	_, err := ke.add(t, "kim", bad, false)
	e := messages.AsError(err)
	if e == nil || e.Code != messages.CodePermissionDenied || !strings.Contains(e.Message, "Wallet.AccountTransfer") || !strings.Contains(e.Message, "Wallet.Withdraw") {
		t.Fatalf("transfer key: %v", err)
	}
	// A wrong secret is refused and journals nothing.
	wrong := ke.sim.DefaultKey()
	wrong.APISecret = strings.Repeat("x", len(wrong.APISecret))
	if _, err := ke.add(t, "kim", wrong, false); messages.CodeOf(err) != messages.CodeExchangeCredentialsInvalid {
		t.Fatalf("wrong secret: %v", err)
	}
	good := ke.sim.DefaultKey()
	v, err := ke.add(t, "kim", good, false)
	if err != nil || !v.Present || !v.Changed || v.ReadOnlyCap || len(v.Permissions) != 3 {
		t.Fatalf("good key: %v %+v", err, v)
	}
	if _, err := ke.add(t, "kim", good, false); messages.CodeOf(err) != messages.CodeInvalidParams {
		t.Fatalf("second add without replace: %v", err)
	}

	// Reads go through the user's venue actor with the stored key.
	res, err := ke.Account(context.Background(), &messages.GetBalancesRequest{User: "kim"})
	if err != nil {
		t.Fatal(err)
	}
	if wb := res.(*messages.WalletBalance); len(wb.Coins) != 1 || !wb.Coins[0].WalletBalance.Equal(decimal.NewFromInt(10000)) {
		t.Fatalf("balances %+v", wb)
	}

	var kinds []string
	for _, r := range ke.records(t) {
		kinds = append(kinds, messages.RecordType(r.Type).String())
		for _, secret := range []string{good.APISecret, bad.APISecret, wrong.APISecret, good.APIKey} {
			if bytes.Contains(r.Payload, []byte(secret)) {
				t.Fatalf("seq %d (%s) holds a secret or key in clear", r.Seq, messages.RecordType(r.Type))
			}
		}
	}
	if got := strings.Join(kinds, ","); got != "user_created,credential_rejected,credential_added" {
		t.Fatalf("journal %s", got)
	}
	raw, _ := os.ReadFile(filepath.Join(ke.dir, "00000000000000000001"))
	if bytes.Contains(raw, []byte(good.APISecret)) {
		t.Fatal("the secret is on disk in clear")
	}
}

func TestReadOnlyKeyCapsProfile(t *testing.T) {
	ke := newKeyEnv(t, t.TempDir(), randomKey(t))
	ke.must(t, &messages.CreateUserRequest{User: "lee"}, messages.ActorCLIAdmin)
	ke.must(t, &messages.SetCeilingRequest{User: "lee", Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT")}}, messages.ActorCLIAdmin)
	ro := ke.simKey(t, true, map[string][]string{"ContractTrade": {"Order"}})
	v, err := ke.add(t, "lee", ro, false)
	if err != nil || !v.ReadOnlyCap {
		t.Fatalf("read-only key: %v %+v", err, v)
	}
	pol := ke.must(t, &messages.ShowPolicyRequest{User: "lee"}, messages.ActorCLIUser)
	if pol.Effective.Profile != messages.ProfileReadOnly {
		t.Fatalf("profile %s with a read-only key", pol.Effective.Profile)
	}
	d, _ := ke.Decide(context.Background(), &messages.DecideActionRequest{User: "lee", Tool: "place_order", Category: "linear", Symbol: "BTCUSDT", RiskIncreasing: true})
	if d.Err == nil || d.Err.Code != messages.CodePermissionDenied {
		t.Fatalf("trading with a read-only key: %+v", d)
	}
}

// Grown permissions, seen by the re-check a stale check triggers, block
// trading with credentials_permissions_changed.
func TestGrownPermissionsBlockTrading(t *testing.T) {
	ke := newKeyEnv(t, t.TempDir(), randomKey(t))
	ke.must(t, &messages.CreateUserRequest{User: "max"}, messages.ActorCLIAdmin)
	ke.must(t, &messages.SetCeilingRequest{User: "max", Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT")}}, messages.ActorCLIAdmin)
	key := ke.simKey(t, false, tradePerms)
	if _, err := ke.add(t, "max", key, false); err != nil {
		t.Fatal(err)
	}
	req := &messages.DecideActionRequest{User: "max", Tool: "place_order", Category: "linear", Symbol: "BTCUSDT", RiskIncreasing: true}
	if d, _ := ke.Decide(context.Background(), req); !d.Allowed {
		t.Fatalf("fresh key: %+v", d.Err)
	}
	// Someone ticks "Withdraw" on the exchange; within the hour nothing is
	// asked, after it the key is checked again before the next decision.
	body := `{"permissions":{"ContractTrade":["Order","Position"],"Spot":["SpotTrade"],"Wallet":["Withdraw"]}}`
	resp, err := http.Post(ke.sim.URL+"/sim/keys/"+key.APIKey+"/permissions", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("set permissions: %v %v", err, resp.Status)
	}
	ke.advance(61 * time.Minute)
	d, err := ke.Decide(context.Background(), req)
	if err != nil || d.Err == nil || d.Err.Code != messages.CodeCredentialsPermissionsChanged {
		t.Fatalf("after the permissions grew: %v %+v", err, d)
	}
	// The permission names are the exchange's words: only in
	// untrusted_text, counted in details.
	if d.Err.Details["offending"] != nil || d.Err.Details["offending_count"] != 1 || d.Err.UntrustedText != `offending: "Wallet.Withdraw"` {
		t.Fatalf("refusal names the permissions outside untrusted_text: %+v", d.Err)
	}
	// Reads still work; the block is on trading.
	if _, err := ke.Account(context.Background(), &messages.GetBalancesRequest{User: "max"}); err != nil {
		t.Fatalf("read after the block: %v", err)
	}
	var checked int
	for _, r := range ke.records(t) {
		if messages.RecordType(r.Type) == messages.RecordCredentialChecked {
			checked++
			if !bytes.Contains(r.Payload, []byte("Wallet.Withdraw")) || r.Actor != messages.ActorSystem {
				t.Fatalf("credential_checked %s by %s", r.Payload, r.Actor)
			}
		}
	}
	if checked != 1 {
		t.Fatalf("%d credential_checked records", checked)
	}
}

// Keys survive a restart (replayed, decrypted with the same master key); a
// sealed key moved to another user, or opened with another master key,
// does not decrypt.
func TestKeysSurviveRestartAndAreBound(t *testing.T) {
	dir := t.TempDir()
	master := randomKey(t)
	ke := newKeyEnv(t, dir, master)
	ke.must(t, &messages.CreateUserRequest{User: "ned"}, messages.ActorCLIAdmin)
	ke.must(t, &messages.CreateUserRequest{User: "oli"}, messages.ActorCLIAdmin)
	if _, err := ke.add(t, "ned", ke.sim.DefaultKey(), false); err != nil {
		t.Fatal(err)
	}
	// Copy ned's credential_added record to oli, as an attacker with write
	// access to the journal might.
	var added []byte
	for _, r := range userRecords(t, dir) {
		if messages.RecordType(r.Type) == messages.RecordCredentialAdded {
			added = r.Payload
		}
	}
	ke2 := newKeyEnv(t, dir, master)
	if _, err := ke2.Account(context.Background(), &messages.GetBalancesRequest{User: "ned"}); err != nil {
		t.Fatalf("ned after restart: %v", err)
	}
	if _, err := ke2.journalJSON(context.Background(), messages.RecordCredentialAdded, "oli", messages.ActorCLIUser, json.RawMessage(added)); err != nil {
		t.Fatal(err)
	}
	ke2.stop()
	ke3 := newKeyEnv(t, dir, master)
	if _, err := ke3.Account(context.Background(), &messages.GetBalancesRequest{User: "oli"}); messages.CodeOf(err) != messages.CodeExchangeCredentialsInvalid {
		t.Fatalf("a key moved to another user: %v", err)
	}
	ke3.stop()
	ke4 := newKeyEnv(t, dir, randomKey(t))
	if _, err := ke4.Account(context.Background(), &messages.GetBalancesRequest{User: "ned"}); messages.CodeOf(err) != messages.CodeExchangeCredentialsInvalid {
		t.Fatalf("another master key: %v", err)
	}
}

func TestUnverifiableKeyAndAttestation(t *testing.T) {
	ke := newKeyEnv(t, t.TempDir(), randomKey(t))
	ke.must(t, &messages.CreateUserRequest{User: "pam"}, messages.ActorCLIAdmin)
	fault := `{"kind":"http_5xx","path":"/v5/user/query-api","every":1,"count":0}`
	if _, err := http.Post(ke.sim.URL+"/sim/faults", "application/json", strings.NewReader(fault)); err != nil {
		t.Fatal(err)
	}
	key := ke.sim.DefaultKey()
	if _, err := ke.add(t, "pam", key, false); messages.CodeOf(err) != messages.CodeExchangeUnavailable {
		t.Fatalf("unverifiable key: %v", err)
	}
	res, err := ke.Handle(context.Background(), &messages.AddCredentialRequest{
		User: "pam", Environment: "paper", APIKey: key.APIKey, APISecret: messages.NewSecret(key.APISecret), AdminAttest: true,
	}, messages.ActorCLIAdmin)
	if err != nil || !res.(*messages.CredentialView).Attested {
		t.Fatalf("attested: %v %+v", err, res)
	}
	recs := ke.records(t)
	last := recs[len(recs)-1]
	if messages.RecordType(last.Type) != messages.RecordCredentialAdded || last.Actor != messages.ActorCLIAdmin || !bytes.Contains(last.Payload, []byte(`"attested":true`)) {
		t.Fatalf("attestation record %s %s %s", messages.RecordType(last.Type), last.Actor, last.Payload)
	}
}

// Secrets never reach the logs.
func TestSecretNeverLogged(t *testing.T) {
	ke := newKeyEnv(t, t.TempDir(), randomKey(t))
	ke.must(t, &messages.CreateUserRequest{User: "quinn"}, messages.ActorCLIAdmin)
	key := ke.sim.DefaultKey()
	ke.add(t, "quinn", key, false)
	bad := key
	bad.APISecret = "S3CRET-" + strings.Repeat("z", 30)
	ke.add(t, "quinn", bad, true)
	req := &messages.AddCredentialRequest{User: "quinn", APIKey: "k", APISecret: messages.NewSecret(bad.APISecret)}
	logged := fmt.Sprintf("%v %+v %s", req, *req, req.APISecret)
	slog.New(slog.NewJSONHandler(ke.buf, nil)).Info("probe", "req", req, "secret", req.APISecret)
	if strings.Contains(logged+ke.buf.String(), bad.APISecret) || strings.Contains(ke.buf.String(), key.APISecret) {
		t.Fatal("a secret reached a log line")
	}
	_ = wal.Record{}
}

// OpenStoredKeys hands out every user's key for one environment, opened
// with the master key; a key that does not open (moved to another user,
// another master key) is counted, not handed out.
func TestOpenStoredKeys(t *testing.T) {
	dir := t.TempDir()
	master := randomKey(t)
	ke := newKeyEnv(t, dir, master)
	for _, u := range []string{"ned", "oli", "pat", "quinn"} {
		ke.must(t, &messages.CreateUserRequest{User: u}, messages.ActorCLIAdmin)
	}
	a, b := ke.sim.DefaultKey(), ke.simKey(t, false, tradePerms)
	for u, k := range map[string]sim.Key{"ned": a, "oli": b} {
		if _, err := ke.add(t, u, k, false); err != nil {
			t.Fatal(err)
		}
	}
	var nedAdded []byte
	for _, r := range userRecords(t, dir) {
		if messages.RecordType(r.Type) == messages.RecordCredentialAdded && r.User == "ned" {
			nedAdded = r.Payload
		}
	}
	if _, err := ke.journalJSON(context.Background(), messages.RecordCredentialAdded, "quinn", messages.ActorCLIUser, json.RawMessage(nedAdded)); err != nil {
		t.Fatal(err)
	}
	ke.stop()

	open := func(master []byte, env string) (map[string]sim.Key, int) {
		t.Helper()
		replay := NewUserReplay()
		l, _, err := wal.Open(dir, wal.Options{OnRecord: replay.OnRecord})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		got := map[string]sim.Key{}
		failed, err := replay.OpenStoredKeys(master, env, func(user, apiKey string, secret messages.Secret) {
			got[user] = sim.Key{APIKey: apiKey, APISecret: secret.Reveal()}
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, failed
	}
	got, failed := open(master, "paper")
	if len(got) != 2 || got["ned"] != a || got["oli"] != b || failed != 1 {
		t.Fatalf("opened %d keys (ned ok %v, oli ok %v), %d failed", len(got), got["ned"] == a, got["oli"] == b, failed)
	}
	if got, failed := open(master, "bybit-demo"); len(got) != 0 || failed != 0 {
		t.Fatalf("bybit-demo: %d keys, %d failed", len(got), failed)
	}
	if got, failed := open(randomKey(t), "paper"); len(got) != 0 || failed != 3 {
		t.Fatalf("another master key: %d keys, %d failed", len(got), failed)
	}
}

// The hourly re-check runs before a trading tool's call, not only before
// a bare decision: place_order with a key that may now withdraw is
// refused with credentials_permissions_changed, and nothing is sent.
func TestGrownPermissionsBlockATradingCall(t *testing.T) {
	ke := newKeyEnv(t, t.TempDir(), randomKey(t))
	ke.must(t, &messages.CreateUserRequest{User: "max"}, messages.ActorCLIAdmin)
	ke.must(t, &messages.SetCeilingRequest{User: "max", Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT"),
		ConfirmActions: strs()}}, messages.ActorCLIAdmin)
	key := ke.simKey(t, false, tradePerms)
	if _, err := ke.add(t, "max", key, false); err != nil {
		t.Fatal(err)
	}
	body := `{"permissions":{"ContractTrade":["Order","Position"],"Spot":["SpotTrade"],"Wallet":["Withdraw"]}}`
	resp, err := http.Post(ke.sim.URL+"/sim/keys/"+key.APIKey+"/permissions", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("set permissions: %v %v", err, resp.Status)
	}
	ke.advance(61 * time.Minute)
	args := messages.PlaceOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Limit",
		Qty: decimal.RequireFromString("0.001"), Price: decimal.NewNullDecimal(decimal.RequireFromString("20000"))}
	res, err := ke.Handle(context.Background(), &messages.PlaceOrderCommand{User: "max", Args: args}, messages.ActorAgent)
	e := messages.AsError(err)
	if e == nil || e.Code != messages.CodeCredentialsPermissionsChanged {
		t.Fatalf("place_order with a key that may now withdraw: %+v %v", res, err)
	}
	var checked, attempts int
	for _, r := range ke.records(t) {
		switch messages.RecordType(r.Type) {
		case messages.RecordCredentialChecked:
			checked++
		case messages.RecordOrderAttempt:
			attempts++
		}
	}
	if checked != 1 || attempts != 0 {
		t.Fatalf("%d credential_checked and %d order_attempt records, want the check and no order", checked, attempts)
	}
}
