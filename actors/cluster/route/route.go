package route

import (
	"crypto/sha256"
	"encoding/binary"
)

// Slot is one shard of a cluster: Index in [0, Count). The zero Slot
// (Count 0) means no cluster: every user and token is local.
type Slot struct {
	Index int
	Count int
}

// Clustered reports whether s is a shard of a cluster.
func (s Slot) Clustered() bool { return s.Count > 0 }

// Holds reports whether s is the shard of key under f (OfUser, OfToken or
// OfTokenID); every key is held by the zero Slot.
func (s Slot) Holds(f func(string, int) int, key string) bool {
	return !s.Clustered() || f(key, s.Count) == s.Index
}

// OfUser returns the shard of a user name.
func OfUser(user string, count int) int { return of("user\x00"+user, count) }

// OfToken returns the shard a bearer token routes to: its user's shard,
// because the shard that issues a token draws it until it routes home.
func OfToken(token string, count int) int {
	sum := sha256.Sum256([]byte(token))
	return OfTokenHash(sum, count)
}

// OfTokenHash is OfToken of a token's SHA-256 (the hash a token is stored
// under), so a shard can check a token it only has the hash of.
func OfTokenHash(sum [sha256.Size]byte, count int) int {
	return int(binary.BigEndian.Uint64(sum[:8]) % uint64(count))
}

// OfTokenID returns the shard a token id routes to (revoke by id).
func OfTokenID(id string, count int) int { return of("token-id\x00"+id, count) }

func of(key string, count int) int {
	if count <= 0 {
		return 0
	}
	sum := sha256.Sum256([]byte(key))
	return int(binary.BigEndian.Uint64(sum[:8]) % uint64(count))
}
