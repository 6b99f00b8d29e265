package keys

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzOpen feeds Open arbitrary Sealed fields. It must never panic, and
// anything but the seed it was sealed from must fail with ErrDecrypt.
func FuzzOpen(f *testing.F) {
	good, err := seal(testMaster, testBinding, testAPIKey, NewSecret(testSecret), seq(SaltLen, 0x20), seq(NonceLen, 0x40))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good.V, good.Salt, good.Nonce, good.CT, "alice")
	f.Add(0, []byte(nil), []byte(nil), []byte(nil), "")
	f.Add(1, good.Salt, good.Nonce, good.CT[:TagLen], "alice")
	f.Add(1, good.Salt[:5], good.Nonce, good.CT, "alice")
	f.Add(-1, good.Salt, good.Nonce, append(good.CT, 0), "bob")
	f.Fuzz(func(t *testing.T, v int, salt, nonce, ct []byte, user string) {
		b := testBinding
		b.User = user
		k, sec, err := Open(testMaster, b, Sealed{V: v, Salt: salt, Nonce: nonce, CT: ct})
		if err == nil {
			if k != testAPIKey || sec.Reveal() != testSecret || user != testBinding.User {
				t.Fatalf("opened a forged credential")
			}
			return
		}
		if !errors.Is(err, ErrDecrypt) || k != "" || !sec.IsZero() {
			t.Fatalf("err = %v, key %q", err, k)
		}
	})
}

// FuzzOpenJSON feeds Open whatever a journal payload might decode to.
func FuzzOpenJSON(f *testing.F) {
	f.Add(`{"v":1,"salt":"ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=","nonce":"QEFCQ0RFRkdISUpL","ct":"6rU5yUg6SA96pJdfCRw65nTZvoLJqYXQj3Oc8pW9yexhQ//bQU4i/7XIn7xS9Z9xo4/trZah2QtJrNHiRqLtZg=="}`)
	f.Add(`{"v":1}`)
	f.Add(`{"v":1e30,"salt":null,"ct":""}`)
	f.Fuzz(func(t *testing.T, payload string) {
		var s Sealed
		if json.Unmarshal([]byte(payload), &s) != nil {
			return
		}
		_, _, err := Open(testMaster, testBinding, s)
		if err != nil && !errors.Is(err, ErrDecrypt) {
			t.Fatalf("err = %v", err)
		}
	})
}

// FuzzCheck feeds Check arbitrary names: no panic, only sanitised names
// out, and acceptance only for the allowlist.
func FuzzCheck(f *testing.F) {
	f.Add("ContractTrade", "Order", false)
	f.Add("Wallet", "Withdraw", true)
	f.Add("Foo\n\"", strings.Repeat("é", 40), false)
	f.Fuzz(func(t *testing.T, group, value string, readOnly bool) {
		v := Check(Permissions{ReadOnly: readOnly, Groups: map[string][]string{group: {value}}})
		allowed := allowlist[[2]string{group, value}]
		if v.Accepted != allowed {
			t.Fatalf("Accepted=%v for %q.%q", v.Accepted, group, value)
		}
		if v.ReadOnlyCap != (readOnly || !allowed) {
			t.Fatalf("ReadOnlyCap=%v", v.ReadOnlyCap)
		}
		for _, o := range v.Offending {
			if len(o.Permission) > MaxNameLen || !sane(o.Permission) {
				t.Fatalf("unsanitised %q", o.Permission)
			}
		}
		if e := v.Error(); e != nil && strings.ContainsAny(e.Message+e.NextStep, "\n\r\"\x00") {
			t.Fatalf("unsafe text: %q", e.Message+e.NextStep)
		}
	})
}
