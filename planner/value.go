package planner

import (
	"bytes"
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of a column, literal or partition value as the planner
// reasons about it. Every Arrow type the planner accepts maps to one kind.
type Kind int

// The kinds. KindNull is the type of the NULL literal before it meets a
// column.
const (
	KindNull      Kind = iota
	KindBool           // I: 0 or 1
	KindInt            // I: int8 … int64, uint8 … uint32
	KindFloat          // F: float32, float64
	KindString         // S: utf8, large_utf8
	KindBinary         // S: the bytes of binary, large_binary
	KindDate           // I: days since 1970-01-01 (date32, date64)
	KindTimestamp      // I: microseconds since 1970-01-01T00:00:00 (timestamps of any unit; with a time zone, in UTC)
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "boolean"
	case KindInt:
		return "integer"
	case KindFloat:
		return "float"
	case KindString:
		return "string"
	case KindBinary:
		return "binary"
	case KindDate:
		return "date"
	case KindTimestamp:
		return "timestamp"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Value is a typed scalar: a literal of a filter, a column value of a row,
// or a partition value. Which field holds it follows Kind (see the Kind
// constants); a NULL has Null set (and any Kind).
type Value struct {
	Kind Kind
	Null bool
	I    int64
	F    float64
	S    string
}

// Null is the NULL of kind k.
func Null(k Kind) Value { return Value{Kind: k, Null: true} }

// Bool is a boolean value (Int, Float, String, Binary, Date and
// Timestamp make the other kinds).
func Bool(b bool) Value {
	if b {
		return Value{Kind: KindBool, I: 1}
	}
	return Value{Kind: KindBool}
}

// Int is an integer value.
func Int(i int64) Value { return Value{Kind: KindInt, I: i} }

// Float is a floating-point value.
func Float(f float64) Value { return Value{Kind: KindFloat, F: f} }

// String is a string value.
func String(s string) Value { return Value{Kind: KindString, S: s} }

// Binary is a binary value.
func Binary(b []byte) Value { return Value{Kind: KindBinary, S: string(b)} }

// Date is a date, as days since 1970-01-01.
func Date(days int64) Value { return Value{Kind: KindDate, I: days} }

// Timestamp is a timestamp, as microseconds since the epoch.
func Timestamp(micros int64) Value { return Value{Kind: KindTimestamp, I: micros} }

// TimeOf is a timestamp's or a date's instant, in UTC.
func (v Value) TimeOf() time.Time {
	if v.Kind == KindDate {
		return time.Unix(v.I*86400, 0).UTC()
	}
	return time.UnixMicro(v.I).UTC()
}

// Compare orders two non-NULL values of one kind: -1, 0 or 1. Values of
// different kinds compare by kind (callers compare values of one kind).
func (v Value) Compare(o Value) int {
	if v.Kind != o.Kind {
		return cmp.Compare(v.Kind, o.Kind)
	}
	switch v.Kind {
	case KindFloat:
		return cmp.Compare(v.F, o.F)
	case KindString:
		return strings.Compare(v.S, o.S)
	case KindBinary:
		return bytes.Compare([]byte(v.S), []byte(o.S))
	}
	return cmp.Compare(v.I, o.I)
}

// Equal reports whether two values are the same (NULLs equal NULLs here:
// this is identity, not SQL's =).
func (v Value) Equal(o Value) bool {
	if v.Null || o.Null {
		return v.Null && o.Null
	}
	return v.Kind == o.Kind && v.Compare(o) == 0
}

// SQL renders the value as a SQL literal (DuckDB's spelling), for residual
// filters and messages.
func (v Value) SQL() string {
	if v.Null {
		return "NULL"
	}
	switch v.Kind {
	case KindBool:
		if v.I != 0 {
			return "TRUE"
		}
		return "FALSE"
	case KindInt:
		return strconv.FormatInt(v.I, 10)
	case KindFloat:
		return strconv.FormatFloat(v.F, 'g', -1, 64)
	case KindString:
		return "'" + strings.ReplaceAll(v.S, "'", "''") + "'"
	case KindBinary:
		return fmt.Sprintf("'\\x%x'::BLOB", v.S)
	case KindDate:
		return "DATE '" + v.TimeOf().Format("2006-01-02") + "'"
	case KindTimestamp:
		return "TIMESTAMP '" + v.TimeOf().Format("2006-01-02 15:04:05.999999") + "'"
	}
	return "NULL"
}

func (v Value) String() string { return v.SQL() }
