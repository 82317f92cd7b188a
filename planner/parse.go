package planner

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/flightns/flightns/nserror"
)

// Limits of a filter, so a hostile one costs little.
const (
	MaxFilterBytes = 64 << 10
	MaxFilterDepth = 128
	MaxInList      = 10000
)

// ParseFilter parses a plan_scan filter — a SQL boolean expression over the
// schema's columns: =, <>, !=, <, <=, >, >=, [NOT] IN, [NOT] BETWEEN, IS
// [NOT] NULL, [NOT] LIKE, AND, OR, NOT, parentheses, TRUE and FALSE — with
// literals of every source type (numbers, 'strings', DATE '…',
// TIMESTAMP '…', TRUE, FALSE, NULL). Literals are coerced to the type of
// the column they meet; NULL follows SQL's three-valued logic (see Expr).
// An empty filter is TRUE. Every error is
// InvalidInput and names its 1-based position in the filter.
func ParseFilter(filter string, schema *Schema) (Expr, error) {
	if len(filter) > MaxFilterBytes {
		return nil, nserror.New(nserror.InvalidInput, "filter: longer than %d bytes", MaxFilterBytes)
	}
	if !utf8.ValidString(filter) {
		return nil, nserror.New(nserror.InvalidInput, "filter: not UTF-8")
	}
	toks, err := lex(filter)
	if err != nil {
		return nil, err
	}
	p := &parser{src: filter, toks: toks, schema: schema}
	if p.peek().kind == tEOF {
		return Literal{Value: true}, nil
	}
	e, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, "unexpected %s", t)
	}
	return e, nil
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tQuoted // "identifier"
	tString
	tNumber
	tOp    // = <> != < <= > >=
	tPunct // ( ) ,
)

type token struct {
	kind tokKind
	text string // identifiers as written; strings unescaped
	pos  int    // byte offset
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of filter"
	case tString:
		return "'" + t.text + "'"
	case tQuoted:
		return `"` + t.text + `"`
	}
	return strconv.Quote(t.text)
}

// lex splits a filter into tokens.
//
//nolint:gocyclo // one case per token kind: a lexer reads best as one switch
func lex(s string) ([]token, error) {
	var out []token
	errAt := func(pos int, format string, args ...any) error {
		return nserror.New(nserror.InvalidInput, "filter: %s at position %d", fmt.Sprintf(format, args...), utf8.RuneCountInString(s[:pos])+1)
	}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += w
		case r == '\'' || r == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, errAt(i, "unterminated %c", r)
				}
				if s[j] == byte(r) {
					if j+1 < len(s) && s[j+1] == byte(r) {
						b.WriteByte(byte(r))
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			k := tString
			if r == '"' {
				k = tQuoted
				if b.Len() == 0 {
					return nil, errAt(i, "empty quoted identifier")
				}
			}
			out = append(out, token{kind: k, text: b.String(), pos: i})
			i = j + 1
		case r == '_' || unicode.IsLetter(r):
			j := i
			for j < len(s) {
				r, w := utf8.DecodeRuneInString(s[j:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				j += w
			}
			out = append(out, token{kind: tIdent, text: s[i:j], pos: i})
			i = j
		case r >= '0' && r <= '9' || r == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '+' || s[j] == '-') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			out = append(out, token{kind: tNumber, text: s[i:j], pos: i})
			i = j
		case strings.HasPrefix(s[i:], "<=") || strings.HasPrefix(s[i:], ">=") || strings.HasPrefix(s[i:], "<>") || strings.HasPrefix(s[i:], "!="):
			out = append(out, token{kind: tOp, text: s[i : i+2], pos: i})
			i += 2
		case r == '=' || r == '<' || r == '>':
			out = append(out, token{kind: tOp, text: s[i : i+1], pos: i})
			i++
		case r == '(' || r == ')' || r == ',' || r == '-':
			out = append(out, token{kind: tPunct, text: s[i : i+1], pos: i})
			i++
		default:
			return nil, errAt(i, "unexpected character %q", r)
		}
	}
	return append(out, token{kind: tEOF, pos: len(s)}), nil
}

type parser struct {
	src    string
	toks   []token
	i      int
	schema *Schema
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return nserror.New(nserror.InvalidInput, "filter: %s at position %d", fmt.Sprintf(format, args...), utf8.RuneCountInString(p.src[:t.pos])+1)
}

// keyword reports whether the next token is the keyword kw, and takes it.
func (p *parser) keyword(kw string) bool {
	t := p.peek()
	if t.kind == tIdent && strings.EqualFold(t.text, kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) isKeyword(k int, kw string) bool {
	if p.i+k >= len(p.toks) {
		return false
	}
	t := p.toks[p.i+k]
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}

func (p *parser) expect(text string) error {
	t := p.next()
	if t.kind != tPunct || t.text != text {
		return p.errAt(t, "expected %q, found %s", text, t)
	}
	return nil
}

func (p *parser) or(depth int) (Expr, error) {
	if depth > MaxFilterDepth {
		return nil, p.errAt(p.peek(), "nested deeper than %d", MaxFilterDepth)
	}
	l, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		r, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		l = Or{l, r}
	}
	return l, nil
}

func (p *parser) and(depth int) (Expr, error) {
	l, err := p.not(depth)
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		r, err := p.not(depth)
		if err != nil {
			return nil, err
		}
		l = And{l, r}
	}
	return l, nil
}

func (p *parser) not(depth int) (Expr, error) {
	if p.keyword("NOT") {
		if depth > MaxFilterDepth {
			return nil, p.errAt(p.peek(), "nested deeper than %d", MaxFilterDepth)
		}
		x, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		return Not{x}, nil
	}
	return p.predicate(depth)
}

// operand is a column or a literal of one side of a comparison.
type operand struct {
	tok    token
	col    *Column
	lit    Value
	litTyp string // "", "date", "timestamp": a typed literal
}

// predicate parses one predicate (a comparison, IN, BETWEEN, IS NULL, a
// parenthesized expression, NOT …).
//
//nolint:gocyclo // one case per predicate form of the grammar: a recursive-descent rule reads best whole
func (p *parser) predicate(depth int) (Expr, error) {
	t := p.peek()
	if t.kind == tPunct && t.text == "(" {
		p.next()
		e, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	}
	left, err := p.operand()
	if err != nil {
		return nil, err
	}
	if left.col == nil && left.litTyp == "" && (left.lit.Null || left.lit.Kind == KindBool) {
		// TRUE / FALSE / NULL alone, unless compared or tested.
		if nt := p.peek(); nt.kind != tOp && !p.isKeyword(0, "IS") {
			if left.lit.Null {
				return Unknown{}, nil
			}
			return Literal{Value: left.lit.I != 0}, nil
		}
	}
	negated := false
	if p.isKeyword(0, "NOT") && (p.isKeyword(1, "IN") || p.isKeyword(1, "BETWEEN") || p.isKeyword(1, "LIKE")) {
		p.next()
		negated = true
	}
	op := p.peek()
	switch {
	case op.kind == tOp:
		p.next()
		right, err := p.operand()
		if err != nil {
			return nil, err
		}
		return p.compare(left, op, right)
	case p.keyword("IS"):
		not := p.keyword("NOT")
		if !p.keyword("NULL") {
			return nil, p.errAt(p.peek(), "expected NULL after IS, found %s", p.peek())
		}
		if left.col == nil {
			// A literal IS [NOT] NULL is decided here.
			return Literal{Value: left.lit.Null != not}, nil
		}
		return IsNull{Column: left.col.Name, Negated: not}, nil
	case p.keyword("IN"):
		col, err := p.needColumn(left)
		if err != nil {
			return nil, err
		}
		if err := p.expect("("); err != nil {
			return nil, err
		}
		var vals []Value
		hasNull := false
		for {
			o, err := p.operand()
			if err != nil {
				return nil, err
			}
			v, err := p.coerce(o, col)
			if err != nil {
				return nil, err
			}
			if v.Null {
				hasNull = true
			} else {
				vals = append(vals, v)
			}
			if len(vals) > MaxInList {
				return nil, p.errAt(o.tok, "an IN list holds at most %d values", MaxInList)
			}
			if t := p.peek(); t.kind == tPunct && t.text == "," {
				p.next()
				continue
			}
			break
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		in := Expr(In{Column: col.Name, Values: vals, Negated: negated})
		switch {
		case !hasNull:
			return in, nil
		case len(vals) == 0:
			return Unknown{}, nil
		case negated:
			// x NOT IN (a, NULL) is x <> a AND x <> NULL: never TRUE, but
			// TRUE under NOT where x = a.
			return And{in, Unknown{}}, nil
		}
		return Or{in, Unknown{}}, nil
	case p.keyword("BETWEEN"):
		col, err := p.needColumn(left)
		if err != nil {
			return nil, err
		}
		lo, err := p.operand()
		if err != nil {
			return nil, err
		}
		if !p.keyword("AND") {
			return nil, p.errAt(p.peek(), "expected AND in BETWEEN, found %s", p.peek())
		}
		hi, err := p.operand()
		if err != nil {
			return nil, err
		}
		l, err := p.coerce(lo, col)
		if err != nil {
			return nil, err
		}
		h, err := p.coerce(hi, col)
		if err != nil {
			return nil, err
		}
		// x BETWEEN l AND h is x >= l AND x <= h; NOT BETWEEN is
		// x < l OR x > h; a NULL bound makes its half UNKNOWN.
		bound := func(op CmpOp, v Value) Expr {
			if v.Null {
				return Unknown{}
			}
			return Compare{col.Name, op, v}
		}
		if negated {
			return Or{bound(OpLt, l), bound(OpGt, h)}, nil
		}
		return And{bound(OpGtEq, l), bound(OpLtEq, h)}, nil
	case p.keyword("LIKE"):
		col, err := p.needColumn(left)
		if err != nil {
			return nil, err
		}
		if col.Kind != KindString {
			return nil, p.errAt(left.tok, "LIKE needs a string column; %s is %s", col.Name, col.Type)
		}
		pt := p.next()
		if pt.kind == tIdent && strings.EqualFold(pt.text, "NULL") {
			return Unknown{}, nil
		}
		if pt.kind != tString {
			return nil, p.errAt(pt, "LIKE takes a 'pattern' or NULL, found %s", pt)
		}
		return Like{Column: col.Name, Pattern: pt.text, Negated: negated}, nil
	}
	if left.col != nil {
		return nil, p.errAt(op, "expected a comparison, IN, BETWEEN, IS or LIKE after %s, found %s", left.col.Name, op)
	}
	return nil, p.errAt(left.tok, "a predicate starts with a column, found %s", left.tok)
}

func (p *parser) needColumn(o operand) (*Column, error) {
	if o.col == nil {
		return nil, p.errAt(o.tok, "expected a column, found %s", o.tok)
	}
	return o.col, nil
}

func (p *parser) compare(l operand, op token, r operand) (Expr, error) {
	o := map[string]CmpOp{"=": OpEq, "<>": OpNotEq, "!=": OpNotEq, "<": OpLt, "<=": OpLtEq, ">": OpGt, ">=": OpGtEq}[op.text]
	switch {
	case l.col != nil && r.col != nil:
		return nil, p.errAt(r.tok, "compare a column with a literal, not with column %s", r.col.Name)
	case l.col == nil && r.col == nil:
		return nil, p.errAt(l.tok, "a comparison needs a column")
	case l.col == nil:
		l, r, o = r, l, o.Flip()
	}
	v, err := p.coerce(r, l.col)
	if err != nil {
		return nil, err
	}
	if v.Null {
		return Unknown{}, nil // x op NULL is UNKNOWN, also under NOT
	}
	return Compare{Column: l.col.Name, Op: o, Value: v}, nil
}

// operand reads a column or a literal.
func (p *parser) operand() (operand, error) {
	t := p.next()
	switch t.kind {
	case tQuoted:
		c, ok := p.schema.Lookup(t.text)
		if !ok {
			return operand{}, p.errAt(t, "unknown column %q", t.text)
		}
		return p.column(t, c)
	case tString:
		return operand{tok: t, lit: String(t.text)}, nil
	case tNumber:
		return p.number(t, false)
	case tPunct:
		if t.text == "-" {
			n := p.next()
			if n.kind != tNumber {
				return operand{}, p.errAt(n, "expected a number after -, found %s", n)
			}
			o, err := p.number(n, true)
			o.tok = t
			return o, err
		}
	case tIdent:
		switch strings.ToUpper(t.text) {
		case "TRUE":
			return operand{tok: t, lit: Bool(true)}, nil
		case "FALSE":
			return operand{tok: t, lit: Bool(false)}, nil
		case "NULL":
			return operand{tok: t, lit: Null(KindNull)}, nil
		case "DATE", "TIMESTAMP":
			if n := p.peek(); n.kind == tString {
				p.next()
				return operand{tok: t, lit: String(n.text), litTyp: strings.ToLower(t.text)}, nil
			}
		}
		if c, ok := p.schema.Lookup(t.text); ok {
			return p.column(t, c)
		}
		if isReserved(t.text) {
			return operand{}, p.errAt(t, "expected a column or a literal, found %s", strings.ToUpper(t.text))
		}
		return operand{}, p.errAt(t, "unknown column %q", t.text)
	}
	return operand{}, p.errAt(t, "expected a column or a literal, found %s", t)
}

func isReserved(s string) bool {
	switch strings.ToUpper(s) {
	case "AND", "OR", "NOT", "IN", "IS", "LIKE", "BETWEEN":
		return true
	}
	return false
}

func (p *parser) column(t token, c Column) (operand, error) {
	if c.Kind == KindNull {
		return operand{}, p.errAt(t, "column %s has type %q, which filters cannot use", c.Name, c.Type)
	}
	return operand{tok: t, col: &c}, nil
}

func (p *parser) number(t token, neg bool) (operand, error) {
	text := t.text
	if neg {
		text = "-" + text
	}
	if i, err := strconv.ParseInt(text, 10, 64); err == nil {
		return operand{tok: t, lit: Int(i)}, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return operand{}, p.errAt(t, "%s is not a number", text)
	}
	return operand{tok: t, lit: Float(f)}, nil
}

// coerce turns a literal into a value of the column's kind.
func (p *parser) coerce(o operand, c *Column) (Value, error) {
	if o.col != nil {
		return Value{}, p.errAt(o.tok, "expected a literal, found column %s", o.col.Name)
	}
	v := o.lit
	if v.Null {
		return Null(c.Kind), nil
	}
	mismatch := func() (Value, error) {
		return Value{}, p.errAt(o.tok, "%s does not fit column %s of type %s", o.describe(), c.Name, c.Type)
	}
	switch c.Kind {
	case KindBool:
		if v.Kind == KindBool && o.litTyp == "" {
			return v, nil
		}
	case KindInt:
		if v.Kind == KindInt {
			return v, nil
		}
		if v.Kind == KindFloat && v.F == math.Trunc(v.F) && math.Abs(v.F) < 1<<63 {
			return Int(int64(v.F)), nil
		}
	case KindFloat:
		switch v.Kind {
		case KindFloat:
			return v, nil
		case KindInt:
			return Float(float64(v.I)), nil
		}
	case KindString, KindBinary:
		if v.Kind == KindString && o.litTyp == "" {
			return Value{Kind: c.Kind, S: v.S}, nil
		}
	case KindDate:
		if v.Kind == KindString && o.litTyp != "timestamp" {
			d, err := time.Parse("2006-01-02", strings.TrimSpace(v.S))
			if err != nil {
				return Value{}, p.errAt(o.tok, "%q is not a date (YYYY-MM-DD)", v.S)
			}
			return Date(floorDiv(d.Unix(), 86400)), nil
		}
	case KindTimestamp:
		if v.Kind == KindString {
			ts, err := parseTimestamp(v.S)
			if err != nil {
				return Value{}, p.errAt(o.tok, "%q is not a timestamp (YYYY-MM-DD[ HH:MM:SS[.ffffff]][Z|±HH:MM])", v.S)
			}
			return Timestamp(ts), nil
		}
	}
	return mismatch()
}

func (o operand) describe() string {
	switch {
	case o.litTyp != "":
		return strings.ToUpper(o.litTyp) + " " + o.lit.SQL()
	case o.lit.Kind == KindInt || o.lit.Kind == KindFloat:
		return "number " + o.lit.SQL()
	case o.lit.Kind == KindBool:
		return "boolean " + o.lit.SQL()
	}
	return "string " + o.lit.SQL()
}

// parseTimestamp reads a timestamp literal as microseconds since the
// epoch; without a zone it is UTC.
func parseTimestamp(s string) (int64, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{
		"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999",
		"2006-01-02 15:04Z07:00", "2006-01-02 15:04", "2006-01-02",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("not a timestamp")
}
