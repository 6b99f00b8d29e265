package route

import (
	"crypto/sha256"
	"strconv"
	"testing"
)

// Every function lands in [0, count), is stable, and spreads 10,000 names
// over 16 shards within 25 % of the mean.
func TestRoutesSpreadAndStayInRange(t *testing.T) {
	const count, n = 16, 10000
	for name, f := range map[string]func(string, int) int{"user": OfUser, "token": OfToken, "id": OfTokenID} {
		hist := make([]int, count)
		for i := range n {
			k := name + "-" + strconv.Itoa(i)
			s := f(k, count)
			if s < 0 || s >= count || f(k, count) != s {
				t.Fatalf("%s(%q) = %d, unstable or out of range", name, k, s)
			}
			hist[s]++
		}
		for i, c := range hist {
			if c < n/count*3/4 || c > n/count*5/4 {
				t.Fatalf("%s: shard %d got %d of %d", name, i, c, n)
			}
		}
	}
	if OfUser("x", 0) != 0 {
		t.Fatal("count 0 must route to 0")
	}
}

// OfToken is OfTokenHash of the token's SHA-256; the zero Slot holds all.
func TestTokenHashAndSlot(t *testing.T) {
	tok := "gx_abc"
	if OfToken(tok, 7) != OfTokenHash(sha256.Sum256([]byte(tok)), 7) {
		t.Fatal("OfToken and OfTokenHash disagree")
	}
	if !(Slot{}).Holds(OfUser, "anyone") {
		t.Fatal("the zero slot must hold every key")
	}
	s := Slot{Index: OfUser("alice", 4), Count: 4}
	if !s.Holds(OfUser, "alice") || (Slot{Index: (s.Index + 1) % 4, Count: 4}).Holds(OfUser, "alice") {
		t.Fatal("Holds does not follow OfUser")
	}
}
