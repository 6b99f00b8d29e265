package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"sort"
	"strings"
)

// Cursors (nextPageCursor / cursor) of the paged account reads.
//
// A cursor is opaque: base64url(JSON position) "." base64url(MAC), where the
// position is the sort key of the last row of the page just sent and the
// MAC (HMAC-SHA256 keyed from the seed, cut to 12 bytes) covers the
// position and the query's scope: the path, the account and every filter
// parameter except limit and cursor. Only unreserved URL characters appear
// in it. The next page starts strictly after that key, so rows added or
// removed between pages never make a row repeat or shift past the cursor.
// A cursor the simulator did not issue, or issued for another query,
// answers 10001.
//
// nextPageCursor is "" when nothing follows the page (Bybit sometimes sends
// a cursor that leads to an empty page; clients must accept both).

// cursorPos is the sort key of one row: T and S for lists sorted newest
// first (time ms, then sequence number, both descending), K and S for
// positions (symbol, then positionIdx, ascending).
type cursorPos struct {
	T int64  `json:"t,omitempty"`
	S uint64 `json:"s,omitempty"`
	K string `json:"k,omitempty"`
}

// newestFirst orders rows by T then S, both descending.
func newestFirst(a, b cursorPos) int {
	switch {
	case a.T != b.T:
		if a.T > b.T {
			return -1
		}
		return 1
	case a.S != b.S:
		if a.S > b.S {
			return -1
		}
		return 1
	}
	return 0
}

// bySymbol orders rows by K then S, both ascending.
func bySymbol(a, b cursorPos) int {
	switch {
	case a.K != b.K:
		return strings.Compare(a.K, b.K)
	case a.S != b.S:
		if a.S < b.S {
			return -1
		}
		return 1
	}
	return 0
}

// cursorScope names the query a cursor belongs to.
func cursorScope(c *call) string {
	var b strings.Builder
	b.WriteString(c.path)
	b.WriteByte(0)
	if c.key != nil {
		b.WriteString(itoa(c.key.acct.uid))
	}
	names := make([]string, 0, len(c.query))
	for k := range c.query {
		if k != "cursor" && k != "limit" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range c.query[k] {
			b.WriteByte(0)
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v)
		}
	}
	return b.String()
}

func (s *Sim) cursorMAC(scope string, payload []byte) []byte {
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], s.model.hash(tagCursor))
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)[:12]
}

// encodeCursor issues the cursor for position p of the query of c.
func (s *Sim) encodeCursor(c *call, p cursorPos) string {
	payload, _ := json.Marshal(p)
	mac := s.cursorMAC(cursorScope(c), payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(mac)
}

// cursorParam reads the optional cursor parameter: nil when absent, a
// 10001 response when it is not one the simulator issued for this query.
func (s *Sim) cursorParam(c *call) (*cursorPos, *response) {
	raw := c.query.Get("cursor")
	if raw == "" {
		return nil, nil
	}
	bad := func() (*cursorPos, *response) {
		r := fail(codeParams, "params error: cursor is invalid")
		return nil, &r
	}
	p64, m64, found := strings.Cut(raw, ".")
	if !found {
		return bad()
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, s.cursorMAC(cursorScope(c), payload)) {
		return bad()
	}
	var p cursorPos
	if err := json.Unmarshal(payload, &p); err != nil {
		return bad()
	}
	return &p, nil
}

// paginate sorts rows by order (on their key), skips every row up to and
// including cur, and returns at most limit rows and the cursor of the last
// one when more follow ("" otherwise).
func paginate[T any](s *Sim, c *call, rows []T, key func(T) cursorPos, order func(a, b cursorPos) int, cur *cursorPos, limit int) ([]T, string) {
	sort.SliceStable(rows, func(i, j int) bool { return order(key(rows[i]), key(rows[j])) < 0 })
	start := 0
	if cur != nil {
		start = sort.Search(len(rows), func(i int) bool { return order(key(rows[i]), *cur) > 0 })
	}
	end := min(start+limit, len(rows))
	page := rows[start:end]
	next := ""
	if end < len(rows) {
		next = s.encodeCursor(c, key(rows[end-1]))
	}
	return page, next
}
