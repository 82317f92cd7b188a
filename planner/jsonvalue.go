package planner

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/nserror"
)

// jsonValue reads a JSON value (as encoding/json decodes it into any) as a
// value of kind k: numbers for integers and floats, strings for strings and
// binary, YYYY-MM-DD (or days) for dates, RFC 3339 / "YYYY-MM-DD
// HH:MM:SS[.ffffff]" (or microseconds) for timestamps, booleans; nil is
// NULL.
func jsonValue(raw any, k Kind, what string) (Value, error) {
	bad := func() (Value, error) {
		b, _ := json.Marshal(raw)
		if len(b) > 64 {
			b = append(b[:61], "..."...)
		}
		return Value{}, nserror.New(nserror.InvalidInput, "%s: %s is not a %s", what, b, k)
	}
	if raw == nil {
		return Null(k), nil
	}
	num := func() (float64, bool) {
		switch x := raw.(type) {
		case float64:
			return x, true
		case json.Number:
			f, err := x.Float64()
			return f, err == nil
		case int:
			return float64(x), true
		case int64:
			return float64(x), true
		}
		return 0, false
	}
	switch k {
	case KindBool:
		if b, ok := raw.(bool); ok {
			return Bool(b), nil
		}
	case KindInt:
		if i, ok := exactInt(raw, true); ok {
			return Int(i), nil
		}
	case KindFloat:
		if f, ok := num(); ok {
			return Float(f), nil
		}
	case KindString:
		if s, ok := raw.(string); ok {
			return String(s), nil
		}
	case KindBinary:
		if s, ok := raw.(string); ok {
			return Binary([]byte(s)), nil
		}
	case KindDate:
		if s, ok := raw.(string); ok {
			d, err := time.Parse("2006-01-02", strings.TrimSpace(s))
			if err == nil {
				return Date(floorDiv(d.Unix(), 86400)), nil
			}
		} else if n, ok := exactInt(raw, false); ok {
			return Date(n), nil
		}
	case KindTimestamp:
		if s, ok := raw.(string); ok {
			if us, err := parseTimestamp(s); err == nil {
				return Timestamp(us), nil
			}
		} else if n, ok := exactInt(raw, false); ok {
			return Timestamp(n), nil
		}
	}
	return bad()
}

// exactInt reads an integer exactly: a json.Number or Go integer of any
// size int64 holds, a decimal string when strings are allowed (how JSON
// clients without 64-bit numbers send them), or a float64 only below
// 2^53, where it is still exact. A number with a fraction or out of range
// is not an integer.
func exactInt(raw any, fromString bool) (int64, bool) {
	switch x := raw.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return i, true
		}
		f, err := x.Float64() // 1e3, 5.0
		if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), true
		}
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	case string:
		if i, err := strconv.ParseInt(x, 10, 64); fromString && err == nil {
			return i, true
		}
	}
	return 0, false
}

// jsonOf is a value as JSON would carry it back: numbers, strings (dates
// as YYYY-MM-DD, timestamps as RFC 3339 in UTC), booleans, nil.
func jsonOf(v Value) any {
	if v.Null {
		return nil
	}
	switch v.Kind {
	case KindBool:
		return v.I != 0
	case KindInt:
		return v.I
	case KindFloat:
		return v.F
	case KindString, KindBinary:
		return v.S
	case KindDate:
		return v.TimeOf().Format("2006-01-02")
	case KindTimestamp:
		return v.TimeOf().Format(time.RFC3339Nano)
	}
	return nil
}
