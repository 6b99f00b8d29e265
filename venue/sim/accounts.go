package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"time"
)

// An account is one simulated Bybit user (UID). Keys belong to an account;
// state that Bybit keeps per UID (balances, positions, orders, rate-limit
// buckets for trading) hangs off it as the simulator grows.
//
// Accounts are guarded by Sim.mu.
type account struct {
	uid    int64
	keys   []*apiKey
	ledger *ledger // balances, positions, orders, executions (ledger.go); nil until first used
}

// An apiKey is one API key of an account, with the record query-api shows.
// Immutable after creation.
type apiKey struct {
	key       string
	secret    string
	id        string
	note      string
	readOnly  bool
	perms     permissions // guarded by Sim.mu (POST /sim/keys/{key}/permissions changes it)
	createdAt time.Time
	acct      *account
}

// keyLifetime is how long a key without bound IPs lives on Bybit.
const keyLifetime = 90 * 24 * time.Hour

// permissions is a query-api permissions object. It keeps every group Bybit
// documents, with an empty list when a group is not granted, and any
// extra group a test asked for.
type permissions map[string][]string

// permissionGroups is the order in which query-api lists its groups
// (docs/bybit.md "Account and key endpoints"); groups outside this list follow, sorted.
var permissionGroups = []string{
	"ContractTrade", "Spot", "Wallet", "Options", "Derivatives", "CopyTrading",
	"BlockTrade", "Exchange", "NFT", "Affiliate", "Earn", "FiatP2P",
	"FiatBitPay", "FiatConvertBroker",
}

// defaultPermissions are the trading permissions of the pre-provisioned key
// (docs/invariants.md "Keys").
func defaultPermissions() permissions {
	return permissions{
		"ContractTrade": {"Order", "Position"},
		"Spot":          {"SpotTrade"},
	}
}

// MarshalJSON writes the groups in Bybit's order, every documented group
// present, arrays never null.
func (p permissions) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	seen := make(map[string]bool, len(permissionGroups))
	first := true
	write := func(name string) error {
		vals := p[name]
		if vals == nil {
			vals = []string{}
		}
		v, err := json.Marshal(vals)
		if err != nil {
			return err
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(strconv.Quote(name))
		b.WriteByte(':')
		b.Write(v)
		return nil
	}
	for _, name := range permissionGroups {
		seen[name] = true
		if err := write(name); err != nil {
			return nil, err
		}
	}
	extra := make([]string, 0)
	for name := range p {
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		if err := write(name); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// clone returns a deep copy.
func (p permissions) clone() permissions {
	out := make(permissions, len(p))
	for k, v := range p {
		out[k] = append([]string(nil), v...)
	}
	return out
}

const (
	alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// randString derives n characters of alphabet from the seed and the given
// words; the same inputs give the same string.
func (s *Sim) randString(n int, alphabet string, words ...uint64) string {
	out := make([]byte, n)
	h := s.model.hash(words...)
	for i := range out {
		h = mix(h + uint64(i) + 1)
		out[i] = alphabet[h%uint64(len(alphabet))]
	}
	return string(out)
}

// Tags that keep the hash streams of different uses apart. Append new tags
// at the end: renumbering changes every seeded price and key.
const (
	tagKey uint64 = iota + 1
	tagSecret
	tagUID
	tagConn
	tagOctave
	tagJitter
	tagBasis
	tagPremium
	tagBook
	tagLevel
	tagCandle
	tagOI
	tagFunding
)

// newKeyLocked creates a new account with one key. Key material is derived
// from the seed and a counter, so a fresh simulator with the same seed hands
// out the same keys in the same order.
func (s *Sim) newKeyLocked(readOnly bool, perms permissions, note string) *apiKey {
	n := s.keySeq
	return s.registerKeyLocked(s.randString(18, alnum, tagKey, n), s.randString(36, alnum, tagSecret, n), readOnly, perms, note)
}

// registerKeyLocked registers a key with the given material on a new
// account. Tests use it directly for the reference vectors' key.
func (s *Sim) registerKeyLocked(key, secret string, readOnly bool, perms permissions, note string) *apiKey {
	n := s.keySeq
	s.keySeq++
	acct := &account{uid: s.freeUIDLocked(n)}
	k := &apiKey{
		key:       key,
		secret:    secret,
		id:        strconv.FormatUint(200000+n, 10),
		note:      note,
		readOnly:  readOnly,
		perms:     perms.clone(),
		createdAt: s.now().UTC().Truncate(time.Second),
		acct:      acct,
	}
	acct.keys = append(acct.keys, k)
	s.accounts = append(s.accounts, acct)
	s.keys[key] = k
	return k
}

// freeUIDLocked is the uid of the account opened for the n-th key: a
// nine-digit number derived from the seed and n, like Bybit's, and never
// the uid of an account of this run or of the state file, parked ones
// included. Order and execution ids derive from the uid (ledger.go), so
// two accounts sharing one would hand out the same ids.
func (s *Sim) freeUIDLocked(n uint64) int64 {
	used := make(map[int64]bool, len(s.accounts))
	for _, a := range s.accounts {
		used[a.uid] = true
	}
	if s.store != nil {
		for _, sa := range s.store.parked {
			used[sa.UID] = true
		}
	}
	words := []uint64{tagUID, n}
	for try := uint64(1); ; try++ {
		if uid := 100000000 + int64(s.model.hash(words...)%900000000); !used[uid] {
			return uid
		}
		words = []uint64{tagUID, n, try}
	}
}

// lookupKey returns the key record for an API key, or nil.
func (s *Sim) lookupKey(key string) *apiKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[key]
}

// queryAPIResult is the result of GET /v5/user/query-api (docs/bybit.md "Account and key endpoints").
type queryAPIResult struct {
	ID            string      `json:"id"`
	Note          string      `json:"note"`
	APIKey        string      `json:"apiKey"`
	ReadOnly      int         `json:"readOnly"`
	Secret        string      `json:"secret"`
	Permissions   permissions `json:"permissions"`
	IPs           []string    `json:"ips"`
	Type          int         `json:"type"`
	DeadlineDay   int         `json:"deadlineDay"`
	ExpiredAt     string      `json:"expiredAt"`
	CreatedAt     string      `json:"createdAt"`
	Unified       int         `json:"unified"`
	UTA           int         `json:"uta"`
	UserID        int64       `json:"userID"`
	InviterID     int64       `json:"inviterID"`
	VIPLevel      string      `json:"vipLevel"`
	MktMakerLevel string      `json:"mktMakerLevel"`
	AffiliateID   int64       `json:"affiliateID"`
	RSAPublicKey  string      `json:"rsaPublicKey"`
	IsMaster      bool        `json:"isMaster"`
	ParentUID     string      `json:"parentUid"`
	KYCLevel      string      `json:"kycLevel"`
	KYCRegion     string      `json:"kycRegion"`
}

// queryAPI answers GET /v5/user/query-api for the calling key.
func (s *Sim) queryAPI(c *call) response {
	k := c.key
	s.mu.Lock()
	perms := k.perms.clone()
	s.mu.Unlock()
	expires := k.createdAt.Add(keyLifetime)
	days := int(math.Ceil(expires.Sub(c.now).Hours() / 24))
	ro := 0
	if k.readOnly {
		ro = 1
	}
	return ok(queryAPIResult{
		ID:            k.id,
		Note:          k.note,
		APIKey:        k.key,
		ReadOnly:      ro,
		Secret:        "",
		Permissions:   perms,
		IPs:           []string{"*"},
		Type:          1,
		DeadlineDay:   days,
		ExpiredAt:     expires.UTC().Format(time.RFC3339),
		CreatedAt:     k.createdAt.UTC().Format(time.RFC3339),
		Unified:       0,
		UTA:           1,
		UserID:        k.acct.uid,
		InviterID:     0,
		VIPLevel:      "No VIP",
		MktMakerLevel: "0",
		AffiliateID:   0,
		RSAPublicKey:  "",
		IsMaster:      true,
		ParentUID:     "0",
		KYCLevel:      "LEVEL_DEFAULT",
		KYCRegion:     "",
	})
}
