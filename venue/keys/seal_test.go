package keys

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

const testAPIKey = "TrswBXTLDVhxqkfDEI"

func seq(n int, start byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

var (
	testMaster  = seq(MasterKeyLen, 0x00)
	testBinding = Binding{CredentialID: "cred_0123456789abcdef", User: "alice", Exchange: "bybit", Environment: "demo"}
)

func mustSeal(t *testing.T) Sealed {
	t.Helper()
	s, err := Seal(testMaster, testBinding, testAPIKey, NewSecret(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func clone(s Sealed) Sealed {
	return Sealed{
		V:     s.V,
		Salt:  bytes.Clone(s.Salt),
		Nonce: bytes.Clone(s.Nonce),
		CT:    bytes.Clone(s.CT),
	}
}

func TestSealOpenRoundTrip(t *testing.T) {
	s := mustSeal(t)
	if s.V != Version || len(s.Salt) != SaltLen || len(s.Nonce) != NonceLen || len(s.CT) != 8+len(testAPIKey)+len(testSecret)+TagLen {
		t.Fatalf("unexpected shape: v=%d salt=%d nonce=%d ct=%d", s.V, len(s.Salt), len(s.Nonce), len(s.CT))
	}
	key, sec, err := Open(testMaster, testBinding, s)
	if err != nil {
		t.Fatal(err)
	}
	if key != testAPIKey || sec.Reveal() != testSecret {
		t.Fatal("round trip changed the credential")
	}

	// Through the JSON a journal payload would hold.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Sealed
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if key, sec, err := Open(testMaster, testBinding, back); err != nil || key != testAPIKey || sec.Reveal() != testSecret {
		t.Fatalf("JSON round trip: %v", err)
	}
}

func TestSealedJSONShape(t *testing.T) {
	s := mustSeal(t)
	b, _ := json.Marshal(s)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 4 || m["v"] != float64(1) {
		t.Fatalf("want exactly v, salt, nonce, ct: %s", b)
	}
	for field, n := range map[string]int{"salt": SaltLen, "nonce": NonceLen, "ct": len(s.CT)} {
		str, _ := m[field].(string)
		raw, err := base64.StdEncoding.DecodeString(str)
		if err != nil || len(raw) != n {
			t.Errorf("%s: not %d bytes of standard base64: %q", field, n, str)
		}
	}
}

// TestSealedHoldsNoPlaintext greps the JSON and every printed form of a
// Sealed for the secret and the API key, raw and encoded.
func TestSealedHoldsNoPlaintext(t *testing.T) {
	s := mustSeal(t)
	b, _ := json.Marshal(s)
	outs := []string{string(b), fmt.Sprintf("%v %+v %#v %x", s, s, s, s)}
	for _, out := range outs {
		for _, plain := range []string{testSecret, testAPIKey} {
			for _, enc := range []string{
				plain,
				base64.StdEncoding.EncodeToString([]byte(plain)),
				base64.StdEncoding.EncodeToString([]byte(plain))[:12],
				hex.EncodeToString([]byte(plain)),
				hex.EncodeToString([]byte(plain[:6])),
			} {
				if strings.Contains(out, enc) {
					t.Errorf("Sealed output contains %q: %s", enc, out)
				}
			}
		}
		if leaks(out) {
			t.Errorf("Sealed output leaks the secret: %s", out)
		}
	}
}

func TestSealTwiceDiffers(t *testing.T) {
	a, b := mustSeal(t), mustSeal(t)
	if bytes.Equal(a.Salt, b.Salt) || bytes.Equal(a.Nonce, b.Nonce) || bytes.Equal(a.CT, b.CT) {
		t.Fatal("two seals of the same credential must differ in salt, nonce and ciphertext")
	}
}

func TestOpenTamperedFails(t *testing.T) {
	orig := mustSeal(t)
	fields := map[string]func(*Sealed) []byte{
		"salt":  func(s *Sealed) []byte { return s.Salt },
		"nonce": func(s *Sealed) []byte { return s.Nonce },
		"ct":    func(s *Sealed) []byte { return s.CT },
	}
	for name, field := range fields {
		n := len(field(&orig))
		for i := 0; i < n; i++ {
			for _, bit := range []byte{0x01, 0x80} {
				s := clone(orig)
				field(&s)[i] ^= bit
				if _, _, err := Open(testMaster, testBinding, s); !errors.Is(err, ErrDecrypt) {
					t.Fatalf("%s byte %d bit %#x: err = %v, want ErrDecrypt", name, i, bit, err)
				}
			}
		}
	}
	bad := map[string]Sealed{
		"zero value":      {},
		"version 0":       func() Sealed { s := clone(orig); s.V = 0; return s }(),
		"version 2":       func() Sealed { s := clone(orig); s.V = 2; return s }(),
		"short salt":      func() Sealed { s := clone(orig); s.Salt = s.Salt[1:]; return s }(),
		"long salt":       func() Sealed { s := clone(orig); s.Salt = append(s.Salt, 0); return s }(),
		"short nonce":     func() Sealed { s := clone(orig); s.Nonce = s.Nonce[1:]; return s }(),
		"long nonce":      func() Sealed { s := clone(orig); s.Nonce = append(s.Nonce, 0); return s }(),
		"truncated ct":    func() Sealed { s := clone(orig); s.CT = s.CT[:len(s.CT)-1]; return s }(),
		"extended ct":     func() Sealed { s := clone(orig); s.CT = append(s.CT, 0); return s }(),
		"tag only":        func() Sealed { s := clone(orig); s.CT = s.CT[len(s.CT)-TagLen:]; return s }(),
		"empty ct":        func() Sealed { s := clone(orig); s.CT = nil; return s }(),
		"huge ct":         func() Sealed { s := clone(orig); s.CT = make([]byte, 1<<20); return s }(),
		"swapped parts":   func() Sealed { s := clone(orig); s.Salt, s.Nonce = s.Nonce, s.Salt; return s }(),
		"other salt":      func() Sealed { s := clone(mustSeal(t)); s.CT, s.Nonce = orig.CT, orig.Nonce; return s }(),
		"other nonce":     func() Sealed { s := clone(mustSeal(t)); s.CT, s.Salt = orig.CT, orig.Salt; return s }(),
		"ct from another": func() Sealed { s := clone(orig); s.CT = mustSeal(t).CT; return s }(),
	}
	for name, s := range bad {
		if k, sec, err := Open(testMaster, testBinding, s); !errors.Is(err, ErrDecrypt) || k != "" || !sec.IsZero() {
			t.Errorf("%s: got (%q, %v, %v), want ErrDecrypt and nothing", name, k, sec.Len(), err)
		}
	}
}

func TestOpenOtherBindingFails(t *testing.T) {
	s := mustSeal(t)
	for name, b := range map[string]Binding{
		"credential id": {"cred_fedcba9876543210", "alice", "bybit", "demo"},
		"user":          {"cred_0123456789abcdef", "bob", "bybit", "demo"},
		"exchange":      {"cred_0123456789abcdef", "alice", "binance", "demo"},
		"environment":   {"cred_0123456789abcdef", "alice", "bybit", "mainnet"},
		"case":          {"cred_0123456789abcdef", "Alice", "bybit", "demo"},
		"empty":         {},
		// Fields shifted across a boundary: only length prefixes tell these apart.
		"shift user/exchange": {"cred_0123456789abcdef", "aliceb", "ybit", "demo"},
		"shift id/user":       {"cred_0123456789abcdefa", "lice", "bybit", "demo"},
		"swap fields":         {"alice", "cred_0123456789abcdef", "bybit", "demo"},
	} {
		if _, _, err := Open(testMaster, b, s); !errors.Is(err, ErrDecrypt) {
			t.Errorf("%s: err = %v, want ErrDecrypt", name, err)
		}
	}
}

func TestAssociatedDataUnambiguous(t *testing.T) {
	pairs := [][2]Binding{
		{{"ab", "c", "x", "y"}, {"a", "bc", "x", "y"}},
		{{"a", "", "b", "c"}, {"a", "b", "", "c"}},
		{{"a\x00", "b", "c", "d"}, {"a", "\x00b", "c", "d"}},
	}
	for _, p := range pairs {
		if bytes.Equal(p[0].associatedData(), p[1].associatedData()) {
			t.Errorf("%q and %q encode the same", p[0], p[1])
		}
	}
	want := "01" + "00000003" + hex.EncodeToString([]byte("cid")) + "00000001" + "75" + "00000005" + hex.EncodeToString([]byte("bybit")) + "00000004" + hex.EncodeToString([]byte("demo"))
	if got := hex.EncodeToString(Binding{"cid", "u", "bybit", "demo"}.associatedData()); got != want {
		t.Errorf("AD layout changed:\n got %s\nwant %s", got, want)
	}
}

func TestOpenWrongMasterKeyFails(t *testing.T) {
	s := mustSeal(t)
	other := bytes.Clone(testMaster)
	other[31] ^= 1
	if _, _, err := Open(other, testBinding, s); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("err = %v, want ErrDecrypt", err)
	}
	if _, _, err := Open(seq(MasterKeyLen, 0x55), testBinding, s); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("err = %v, want ErrDecrypt", err)
	}
}

func TestMasterKeyLength(t *testing.T) {
	s := mustSeal(t)
	for _, n := range []int{0, 1, 16, 24, 31, 33, 64} {
		mk := seq(n, 0)
		if _, err := Seal(mk, testBinding, testAPIKey, NewSecret(testSecret)); !errors.Is(err, ErrMasterKey) {
			t.Errorf("Seal with %d-byte master key: err = %v, want ErrMasterKey", n, err)
		}
		if _, _, err := Open(mk, testBinding, s); !errors.Is(err, ErrMasterKey) {
			t.Errorf("Open with %d-byte master key: err = %v, want ErrMasterKey", n, err)
		}
	}
	if _, err := Seal(nil, testBinding, testAPIKey, NewSecret(testSecret)); !errors.Is(err, ErrMasterKey) {
		t.Errorf("nil master key: %v", err)
	}
}

func TestSealRefusesBadInput(t *testing.T) {
	long := strings.Repeat("x", MaxBindingFieldLen+1)
	cases := []struct {
		field  string
		b      Binding
		key    string
		secret Secret
	}{
		{"credential_id", Binding{"", "u", "bybit", "demo"}, testAPIKey, NewSecret(testSecret)},
		{"user", Binding{"c", "", "bybit", "demo"}, testAPIKey, NewSecret(testSecret)},
		{"exchange", Binding{"c", "u", "", "demo"}, testAPIKey, NewSecret(testSecret)},
		{"environment", Binding{"c", "u", "bybit", ""}, testAPIKey, NewSecret(testSecret)},
		{"user", Binding{"c", long, "bybit", "demo"}, testAPIKey, NewSecret(testSecret)},
		{"api_key", testBinding, "", NewSecret(testSecret)},
		{"api_key", testBinding, strings.Repeat("k", MaxAPIKeyLen+1), NewSecret(testSecret)},
		{"api_secret", testBinding, testAPIKey, Secret{}},
		{"api_secret", testBinding, testAPIKey, NewSecret(strings.Repeat(testSecret, MaxSecretLen))},
	}
	for _, c := range cases {
		_, err := Seal(testMaster, c.b, c.key, c.secret)
		var me *messages.Error
		if !errors.As(err, &me) || me.Code != messages.CodeInvalidParams || me.Details["field"] != c.field {
			t.Errorf("%s: err = %v, want invalid_params naming the field", c.field, err)
			continue
		}
		if leaks(err.Error()) || strings.Contains(err.Error(), testAPIKey) {
			t.Errorf("%s: error echoes the credential: %v", c.field, err)
		}
	}
}

func TestSealBounds(t *testing.T) {
	// The largest allowed credential seals and opens, and so does the smallest.
	for _, c := range [][2]string{
		{strings.Repeat("k", MaxAPIKeyLen), strings.Repeat("s", MaxSecretLen)},
		{"k", "s"},
	} {
		s, err := Seal(testMaster, testBinding, c[0], NewSecret(c[1]))
		if err != nil {
			t.Fatal(err)
		}
		k, sec, err := Open(testMaster, testBinding, s)
		if err != nil || k != c[0] || sec.Reveal() != c[1] {
			t.Fatalf("bounds round trip: %v", err)
		}
	}
}

func TestDecodePlaintext(t *testing.T) {
	good := encodePlaintext("key", "secret")
	if k, s, ok := decodePlaintext(good); !ok || k != "key" || s != "secret" {
		t.Fatal("decode(encode) failed")
	}
	for name, pt := range map[string][]byte{
		"empty":          nil,
		"short":          {0, 0, 0},
		"trailing":       append(bytes.Clone(good), 0),
		"truncated":      good[:len(good)-1],
		"empty key":      encodePlaintext("", "secret"),
		"empty secret":   encodePlaintext("key", ""),
		"huge length":    {0xff, 0xff, 0xff, 0xff, 'k'},
		"key over limit": encodePlaintext(strings.Repeat("k", MaxAPIKeyLen+1), "s"),
	} {
		if _, _, ok := decodePlaintext(pt); ok {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestKnownAnswer pins the version 1 bytes: a Sealed already in a journal
// must open after any change to this package.
func TestKnownAnswer(t *testing.T) {
	const golden = `{"v":1,"salt":"ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=","nonce":"QEFCQ0RFRkdISUpL","ct":"6rU5yUg6SA96pJdfCRw65nTZvoLJqYXQj3Oc8pW9yexhQ//bQU4i/7XIn7xS9Z9xo4/trZah2QtJrNHiRqLtZg=="}`
	s, err := seal(testMaster, testBinding, testAPIKey, NewSecret(testSecret), seq(SaltLen, 0x20), seq(NonceLen, 0x40))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(s)
	if string(got) != golden {
		t.Fatalf("sealed bytes changed:\n got %s\nwant %s", got, golden)
	}
	var g Sealed
	if err := json.Unmarshal([]byte(golden), &g); err != nil {
		t.Fatal(err)
	}
	k, sec, err := Open(testMaster, testBinding, g)
	if err != nil || k != testAPIKey || sec.Reveal() != testSecret {
		t.Fatalf("golden does not open: %v", err)
	}
}

func TestCredentialID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewCredentialID()
		if !ValidCredentialID(id) {
			t.Fatalf("%q is not valid", id)
		}
		if seen[id] {
			t.Fatalf("duplicate %q", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "cred_", "cred_0123456789abcde", "cred_0123456789abcdef0", "cred_0123456789ABCDEF", "card_0123456789abcdef", "cred_0123456789abcdeg", "cred_0123456789abcd\n"} {
		if ValidCredentialID(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFingerprint(t *testing.T) {
	fp := Fingerprint(testAPIKey)
	if !strings.HasPrefix(fp, "fp_") || !strings.HasSuffix(fp, "_fDEI") || len(fp) != len("fp_")+12+len("_fDEI") {
		t.Fatalf("fingerprint shape: %q", fp)
	}
	if fp != Fingerprint(testAPIKey) {
		t.Fatal("fingerprint not deterministic")
	}
	if Fingerprint(testAPIKey+"x") == fp || Fingerprint("UrswBXTLDVhxqkfDEI")[:15] == fp[:15] {
		t.Fatal("fingerprint does not depend on the whole key")
	}
	if strings.Contains(fp, testAPIKey[:8]) {
		t.Fatal("fingerprint shows the key")
	}
	// Pinned: the journal compares fingerprints across versions.
	if want := "fp_b2a8fb955f77_fDEI"; fp != want {
		t.Errorf("Fingerprint = %q, want %q", fp, want)
	}
	for key, want := range map[string]int{
		"":                      0,
		"short":                 3 + 12,
		"abcdefghij\n\"x":       3 + 12,
		"abcdefghijkl":          3 + 12 + 5,
		"abcdefghijklmnop-._x":  3 + 12,
		strings.Repeat("é", 10): 3 + 12,
	} {
		if got := Fingerprint(key); len(got) != want {
			t.Errorf("Fingerprint(%q) = %q, want length %d", key, got, want)
		}
	}
}
