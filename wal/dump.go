package wal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// TimeFormat is how dumps print record times: RFC 3339, UTC, always nine
// fractional digits, so that lines sort and align.
const TimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// DumpOptions selects and formats records for Dump. The zero value dumps
// every record as JSON lines with numeric type names.
type DumpOptions struct {
	// User keeps only records of this user; "" keeps all.
	User string
	// Types keeps only records of these types; empty keeps all.
	Types []uint16
	// Since keeps records with Time >= Since; zero means no lower bound.
	Since time.Time
	// Until keeps records with Time < Until; zero means no upper bound.
	Until time.Time
	// Format is "jsonl" (the default when empty) or "table".
	Format string
	// TypeName names a record type; nil, or "" for a number, prints the
	// number in decimal.
	TypeName func(uint16) string
}

// Dump formats.
const (
	FormatJSONL = "jsonl"
	FormatTable = "table"
)

// ErrBadFormat is returned by Dump for an unknown DumpOptions.Format.
var ErrBadFormat = errors.New(`wal: unknown dump format, want "jsonl" or "table"`)

// Dump writes the records of the journal in dir that pass o's filters to
// w, in seq order. With "jsonl", each record is one line holding the
// object MarshalRecordJSON makes. With "table", a header line and then one
// aligned line per record: seq, time, user, type, actor, channel, the
// first 12 hex digits of the hash, and the payload cut to about 80 characters (control
// characters in any column are shown as '?').
//
// Dump reads like Scan: if it meets damage it stops with a *DamageError
// after writing every record before it. Run it on a Snapshot when a server
// may be writing.
func Dump(w io.Writer, dir string, o DumpOptions) error {
	format := o.Format
	if format == "" {
		format = FormatJSONL
	}
	if format != FormatJSONL && format != FormatTable {
		return fmt.Errorf("%w: %q", ErrBadFormat, o.Format)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if format == FormatTable {
		fmt.Fprintf(bw, "%8s  %-24s  %-16s  %-24s  %-16s  %-28s  %-12s  %s\n", "SEQ", "TIME", "USER", "TYPE", "ACTOR", "CHANNEL", "HASH", "PAYLOAD")
	}
	var line []byte
	err := Scan(dir, func(r Record) error {
		if !o.keep(&r) {
			return nil
		}
		if format == FormatTable {
			writeTableRow(bw, &r, o.TypeName)
		} else {
			var err error
			if line, err = appendRecordJSON(line[:0], &r, o.TypeName); err != nil {
				return err
			}
			line = append(line, '\n')
			bw.Write(line)
		}
		return nil
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func (o *DumpOptions) keep(r *Record) bool {
	if o.User != "" && r.User != o.User {
		return false
	}
	if len(o.Types) > 0 && !slices.Contains(o.Types, r.Type) {
		return false
	}
	if !o.Since.IsZero() && r.Time.Before(o.Since) {
		return false
	}
	if !o.Until.IsZero() && !r.Time.Before(o.Until) {
		return false
	}
	return true
}

func typeName(t uint16, name func(uint16) string) string {
	if name != nil {
		if s := name(t); s != "" {
			return s
		}
	}
	return strconv.FormatUint(uint64(t), 10)
}

// jsonRecord fixes the field order and names of a dumped record.
type jsonRecord struct {
	Seq      uint64          `json:"seq"`
	Time     string          `json:"time"`
	User     string          `json:"user"`
	Type     string          `json:"type"`
	Actor    string          `json:"actor"`
	Channel  string          `json:"channel,omitempty"`
	Payload  json.RawMessage `json:"payload"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
	Epoch    uint64          `json:"epoch,omitempty"`
}

// MarshalRecordJSON returns r as one line of JSON (no trailing newline)
// with exactly these fields, in this order: seq, time (RFC 3339 UTC, nine
// fractional digits), user, type (typeName's name, or the number in
// decimal), actor, channel (omitted when empty), payload (the stored JSON,
// compacted; "{}" when empty), prev_hash and hash (lowercase hex). A
// payload that is not valid JSON is an error.
func MarshalRecordJSON(r Record, typeName func(uint16) string) ([]byte, error) {
	return appendRecordJSON(nil, &r, typeName)
}

func appendRecordJSON(dst []byte, r *Record, name func(uint16) string) ([]byte, error) {
	payload := r.Payload
	if len(payload) == 0 {
		payload = emptyPayload
	}
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(jsonRecord{
		Seq:      r.Seq,
		Time:     r.Time.UTC().Format(TimeFormat),
		User:     r.User,
		Type:     typeName(r.Type, name),
		Actor:    r.Actor,
		Channel:  r.Channel,
		Payload:  payload,
		PrevHash: hexHash(r.PrevHash),
		Hash:     hexHash(r.Hash),
		Epoch:    r.Epoch,
	})
	if err != nil {
		return dst, fmt.Errorf("wal: seq %d: %w", r.Seq, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// payloadCut is how many characters of payload a table row shows;
// channelCut how many of the channel (who acted and how: "client_ui
// http token=tok_…", "socket uid=1000 pid=42"; "-" when empty).
const (
	payloadCut = 80
	channelCut = 27
)

func writeTableRow(w io.Writer, r *Record, name func(uint16) string) {
	payload := r.Payload
	if len(payload) == 0 {
		payload = emptyPayload
	}
	var compact bytes.Buffer
	if json.Compact(&compact, payload) == nil {
		payload = compact.Bytes()
	}
	channel := r.Channel
	if channel == "" {
		channel = "-"
	}
	// Padded by characters, not bytes: a cut channel ends in "…".
	channel = printable(channel, channelCut)
	channel += strings.Repeat(" ", max(0, channelCut+1-utf8.RuneCountInString(channel)))
	fmt.Fprintf(w, "%8d  %-24s  %-16s  %-24s  %-16s  %s  %-12s  %s\n",
		r.Seq,
		r.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		printable(r.User, 0),
		printable(typeName(r.Type, name), 0),
		printable(r.Actor, 0),
		channel,
		hexHash(r.Hash)[:12],
		printable(string(payload), payloadCut))
}

// printable replaces control characters and invalid UTF-8 with '?' (a
// table goes to a terminal; journal text may come from the model or the
// exchange) and cuts s to limit characters with "…" when limit > 0.
func printable(s string, limit int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if limit > 0 && n == limit {
			b.WriteString("…")
			break
		}
		if c == utf8.RuneError && size == 1 || unicode.IsControl(c) {
			c = '?'
		}
		b.WriteRune(c)
		n++
	}
	return b.String()
}
