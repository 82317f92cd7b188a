package planner

import (
	"math"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

const (
	microsPerHour = int64(time.Hour / time.Microsecond)
	microsPerDay  = 24 * microsPerHour
)

// floorDiv divides rounding toward negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// daysOf is the day (since 1970-01-01) of a date or timestamp.
func daysOf(v Value) int64 {
	if v.Kind == KindDate {
		return v.I
	}
	return floorDiv(v.I, microsPerDay)
}

// apply computes a field's partition value from its source values (one per
// source id). A NULL source gives a NULL partition value. Expression
// fields cannot be computed here.
func (r *resolved) apply(src []Value) (Value, error) {
	for _, v := range src {
		if v.Null {
			return Null(r.kind), nil
		}
	}
	if r.Transform == nil {
		return Value{}, nserror.New(nserror.InvalidInput, "partition field %s is an expression (%s): give its value", r.FieldID, r.Expression)
	}
	v := src[0]
	switch r.Transform.Type {
	case TransformIdentity:
		return v, nil
	case TransformYear:
		return Int(int64(v.TimeOf().Year() - 1970)), nil
	case TransformMonth:
		t := v.TimeOf()
		return Int(int64(t.Year()-1970)*12 + int64(t.Month()) - 1), nil
	case TransformDay:
		return Date(daysOf(v)), nil
	case TransformHour:
		return Int(floorDiv(v.I, microsPerHour)), nil
	case TransformBucket:
		return Int(bucketOf(hashValue(v), r.Transform.NumBuckets)), nil
	case TransformMultiBucket:
		var buf []byte
		for _, s := range src {
			buf = hashBytes(s, buf)
		}
		return Int(bucketOf(int32(murmur3(buf)), r.Transform.NumBuckets)), nil
	case TransformTruncate:
		w := r.Transform.Width
		switch v.Kind {
		case KindInt:
			return Int(v.I - v.I%int64(w)), nil
		case KindString:
			return String(truncateRunes(v.S, w)), nil
		case KindBinary:
			if len(v.S) > w {
				return Binary([]byte(v.S[:w])), nil
			}
			return v, nil
		}
	}
	return Value{}, nserror.New(nserror.InvalidInput, "partition field %s: %s cannot take a %s", r.FieldID, r.Transform.Type, v.Kind)
}

func truncateRunes(s string, w int) string {
	n := 0
	for i := range s {
		if n == w {
			return s[:i]
		}
		n++
	}
	return s
}

// domain is the set of source values whose transform gives a partition
// value: the preimage the planner prunes with. It is an interval of one
// kind (nil bounds are open), or the NULL alone, or empty; exact says it
// is exactly that set (false: a superset, e.g. for a hash).
type domain struct {
	null, empty    bool
	lo, hi         *Value
	loIncl, hiIncl bool
}

// preimage is the domain of a single-source field's partition value p, or
// ok=false when the field says nothing usable about its source's range
// (bucket, multi_bucket, expressions).
func (r *resolved) preimage(p Value) (domain, bool) {
	if r.Transform == nil || len(r.sources) != 1 {
		return domain{}, false
	}
	if p.Null {
		return domain{null: true}, true
	}
	src := r.sources[0]
	point := func(v Value) (domain, bool) { return domain{lo: &v, hi: &v, loIncl: true, hiIncl: true}, true }
	// span is [from, from+n) units (days or hours) of time, or months,
	// as an interval of the source's kind. Bounds past what the source
	// can hold are clamped to its range (int64 microseconds; a date's
	// days are read in seconds, which hold every date32).
	span := func(unit string, from, n int64) (domain, bool) {
		var loS, hiS int64 // [loS, hiS) in seconds, saturated
		switch unit {
		case "month":
			loS, hiS = monthStartSeconds(from), monthStartSeconds(from+n)
		case "day":
			loS, hiS = satMul(from, 86400), satMul(satAdd(from, n), 86400)
		case "hour":
			loS, hiS = satMul(from, 3600), satMul(satAdd(from, n), 3600)
		}
		if src.Kind == KindDate {
			lo, hi := Date(floorDiv(loS, 86400)), Date(floorDiv(satAdd(hiS, -1), 86400))
			return domain{lo: &lo, hi: &hi, loIncl: true, hiIncl: true}, true
		}
		hiUs := satMul(hiS, 1_000_000)
		if hiUs != math.MaxInt64 { // (saturated: the top microsecond is inside)
			hiUs--
		}
		lo, hi := Timestamp(satMul(loS, 1_000_000)), Timestamp(hiUs)
		return domain{lo: &lo, hi: &hi, loIncl: true, hiIncl: true}, true
	}
	switch r.Transform.Type {
	case TransformIdentity:
		if p.Kind != src.Kind {
			return domain{}, false
		}
		return point(p)
	case TransformYear:
		return span("month", satMul(p.I, 12), 12)
	case TransformMonth:
		return span("month", p.I, 1)
	case TransformDay:
		return span("day", p.I, 1)
	case TransformHour:
		return span("hour", p.I, 1)
	case TransformTruncate:
		w := int64(r.Transform.Width)
		switch src.Kind {
		case KindInt:
			lo, hi := p.I, p.I
			switch {
			case p.I > 0:
				hi = satAdd(p.I, w-1)
			case p.I < 0:
				lo = satAdd(p.I, -(w - 1))
			default:
				lo, hi = -(w - 1), w-1
			}
			l, h := Int(lo), Int(hi)
			return domain{lo: &l, hi: &h, loIncl: true, hiIncl: true}, true
		case KindString, KindBinary:
			n := len(p.S)
			if src.Kind == KindString {
				n = utf8.RuneCountInString(p.S)
			}
			if int64(n) < w {
				return point(p)
			}
			return prefixDomain(p), true
		}
	}
	return domain{}, false
}

// monthStartSeconds is the first second of month m since 1970-01,
// saturated at the int64 range.
func monthStartSeconds(m int64) int64 {
	y, mo := floorDiv(m, 12), m-12*floorDiv(m, 12)
	const maxYear = 1 << 40 // far beyond any date32 or timestamp
	switch {
	case y > maxYear:
		return math.MaxInt64
	case y < -maxYear:
		return math.MinInt64
	}
	return time.Date(int(1970+y), time.Month(mo+1), 1, 0, 0, 0, 0, time.UTC).Unix()
}

// satAdd and satMul are + and * saturated at the int64 range.
func satAdd(a, b int64) int64 {
	c := a + b
	switch {
	case a > 0 && b > 0 && c < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && c >= 0:
		return math.MinInt64
	}
	return c
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	c := a * b
	if c/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		if (a < 0) != (b < 0) {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return c
}

// prefixDomain is every string (or byte string) starting with p.
func prefixDomain(p Value) domain {
	lo := p
	d := domain{lo: &lo, loIncl: true}
	if hi, ok := successor(p.S); ok {
		h := Value{Kind: p.Kind, S: hi}
		d.hi = &h
	}
	return d
}

// successor is the least string above every string with prefix s.
func successor(s string) (string, bool) {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// intersect narrows d by o.
func (d domain) intersect(o domain) domain {
	if d.empty || o.empty {
		return domain{empty: true}
	}
	if d.null || o.null {
		if d.null && o.null {
			return d
		}
		return domain{empty: true}
	}
	if o.lo != nil && (d.lo == nil || o.lo.Compare(*d.lo) > 0 || o.lo.Compare(*d.lo) == 0 && !o.loIncl) {
		d.lo, d.loIncl = o.lo, o.loIncl
	}
	if o.hi != nil && (d.hi == nil || o.hi.Compare(*d.hi) < 0 || o.hi.Compare(*d.hi) == 0 && !o.hiIncl) {
		d.hi, d.hiIncl = o.hi, o.hiIncl
	}
	if d.lo != nil && d.hi != nil {
		c := d.lo.Compare(*d.hi)
		closed := d.loIncl && d.hiIncl
		if c > 0 || c == 0 && !closed {
			return domain{empty: true}
		}
	}
	return d
}

// goValue is a partition value as a __manifest column value (nil: NULL).
func goValue(v Value, col manifesttable.ColumnType) any {
	if v.Null {
		return nil
	}
	switch col {
	case manifesttable.ColBool:
		return v.I != 0
	case manifesttable.ColInt32:
		return int32(v.I)
	case manifesttable.ColInt64:
		return v.I
	case manifesttable.ColFloat64:
		return v.F
	case manifesttable.ColUtf8:
		return v.S
	case manifesttable.ColBinary:
		return []byte(v.S)
	case manifesttable.ColDate32:
		return arrow.Date32(v.I)
	case manifesttable.ColTimestamp:
		return time.UnixMicro(v.I).UTC()
	}
	return nil
}

// valueOf reads a __manifest column value as a Value of kind k; false when
// it cannot (a type this version does not know).
func valueOf(x any, k Kind) (Value, bool) {
	switch v := x.(type) {
	case nil:
		return Null(k), true
	case bool:
		return Bool(v), k == KindBool
	case int32:
		return Value{Kind: k, I: int64(v)}, k == KindInt
	case int64:
		return Value{Kind: k, I: v}, k == KindInt
	case uint64:
		return Value{Kind: k, I: int64(v)}, k == KindInt
	case float64:
		return Float(v), k == KindFloat
	case string:
		return Value{Kind: k, S: v}, k == KindString || k == KindBinary
	case []byte:
		return Value{Kind: k, S: string(v)}, k == KindBinary || k == KindString
	case arrow.Date32:
		return Date(int64(v)), k == KindDate
	case time.Time:
		return Timestamp(v.UnixMicro()), k == KindTimestamp
	}
	return Value{}, false
}
