package planner

import (
	"strings"
)

// Column is a column of a partitioned table's schema.
type Column struct {
	Name    string
	FieldID int32 // the schema's lance:field_id
	Kind    Kind  // KindNull: a type the planner cannot reason about
	Type    string
}

// Schema is the columns a filter may name.
type Schema struct {
	Columns []Column
}

// Lookup finds a column by name, case-insensitively as SQL does for
// unquoted names (an exact match wins).
func (s *Schema) Lookup(name string) (Column, bool) {
	for _, c := range s.Columns {
		if c.Name == name {
			return c, true
		}
	}
	for _, c := range s.Columns {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
	}
	return Column{}, false
}

// ByFieldID finds a column by its field id.
func (s *Schema) ByFieldID(id int32) (Column, bool) {
	for _, c := range s.Columns {
		if c.FieldID == id {
			return c, true
		}
	}
	return Column{}, false
}

// Expr is a boolean expression over a table's columns: what a plan_scan
// filter parses into, and what projecting it through partition transforms
// yields (over partition columns). String renders it as SQL.
//
// Every literal has the kind of the column it meets (the parser coerces
// and checks). A predicate with a NULL operand (x = NULL, x IN (NULL),
// BETWEEN with a NULL bound, LIKE NULL) is UNKNOWN for every row: it
// parses into Unknown, which stays UNKNOWN under NOT (SQL's three-valued
// logic), so x NOT BETWEEN lo AND NULL is x < lo OR UNKNOWN — true where
// x < lo.
type Expr interface {
	String() string
	expr()
}

// CmpOp is a comparison operator.
type CmpOp int

// The comparison operators.
const (
	OpEq CmpOp = iota
	OpNotEq
	OpLt
	OpLtEq
	OpGt
	OpGtEq
)

func (o CmpOp) String() string {
	return [...]string{"=", "<>", "<", "<=", ">", ">="}[o]
}

// Negate is the operator of NOT (a o b).
func (o CmpOp) Negate() CmpOp {
	return [...]CmpOp{OpNotEq, OpEq, OpGtEq, OpGt, OpLtEq, OpLt}[o]
}

// Flip is the operator of (b o' a) when (a o b).
func (o CmpOp) Flip() CmpOp {
	return [...]CmpOp{OpEq, OpNotEq, OpGt, OpGtEq, OpLt, OpLtEq}[o]
}

type (
	// And is true when both sides are.
	And struct{ Left, Right Expr }
	// Or is true when either side is.
	Or struct{ Left, Right Expr }
	// Not negates.
	Not struct{ X Expr }
	// Literal is TRUE or FALSE.
	Literal struct{ Value bool }
	// Unknown is the NULL truth value: UNKNOWN for every row, and under
	// NOT too. A filter keeps a row only where it is TRUE, so an Unknown
	// that no NOT reaches (negation normal form) filters like FALSE.
	Unknown struct{}
	// Compare is `Column Op Value` (a literal on the left is flipped to the
	// right by the parser).
	Compare struct {
		Column string
		Op     CmpOp
		Value  Value
	}
	// In is `Column [NOT] IN (Values)`.
	In struct {
		Column  string
		Values  []Value
		Negated bool
	}
	// IsNull is `Column IS [NOT] NULL`.
	IsNull struct {
		Column  string
		Negated bool
	}
	// Like is `Column [NOT] LIKE 'Pattern'` on a string column; % and _
	// are the wildcards, no escape character.
	Like struct {
		Column  string
		Pattern string
		Negated bool
	}
	// Range is `Column` within bounds: the planner merges the comparisons
	// of one column under an AND into it; a nil bound is open.
	Range struct {
		Column         string
		Lo, Hi         *Value
		LoIncl, HiIncl bool
	}
)

func (And) expr()     {}
func (Or) expr()      {}
func (Not) expr()     {}
func (Literal) expr() {}
func (Unknown) expr() {}
func (Compare) expr() {}
func (In) expr()      {}
func (IsNull) expr()  {}
func (Like) expr()    {}
func (Range) expr()   {}

func (e And) String() string { return "(" + e.Left.String() + " AND " + e.Right.String() + ")" }
func (e Or) String() string  { return "(" + e.Left.String() + " OR " + e.Right.String() + ")" }
func (e Not) String() string { return "(NOT " + e.X.String() + ")" }

func (e Literal) String() string {
	if e.Value {
		return "TRUE"
	}
	return "FALSE"
}

func (Unknown) String() string { return "NULL" }

func (e Compare) String() string {
	return quoteIdent(e.Column) + " " + e.Op.String() + " " + e.Value.SQL()
}

func (e In) String() string {
	parts := make([]string, len(e.Values))
	for i, v := range e.Values {
		parts[i] = v.SQL()
	}
	not := ""
	if e.Negated {
		not = "NOT "
	}
	return quoteIdent(e.Column) + " " + not + "IN (" + strings.Join(parts, ", ") + ")"
}

func (e IsNull) String() string {
	if e.Negated {
		return quoteIdent(e.Column) + " IS NOT NULL"
	}
	return quoteIdent(e.Column) + " IS NULL"
}

func (e Like) String() string {
	not := ""
	if e.Negated {
		not = "NOT "
	}
	return quoteIdent(e.Column) + " " + not + "LIKE " + String(e.Pattern).SQL()
}

func (e Range) String() string {
	var parts []string
	if e.Lo != nil {
		op := ">"
		if e.LoIncl {
			op = ">="
		}
		parts = append(parts, quoteIdent(e.Column)+" "+op+" "+e.Lo.SQL())
	}
	if e.Hi != nil {
		op := "<"
		if e.HiIncl {
			op = "<="
		}
		parts = append(parts, quoteIdent(e.Column)+" "+op+" "+e.Hi.SQL())
	}
	if len(parts) == 0 {
		return quoteIdent(e.Column) + " IS NOT NULL"
	}
	return "(" + strings.Join(parts, " AND ") + ")"
}

// Prefix returns the literal prefix of a LIKE 'prefix%' pattern (one
// trailing %, no other wildcard), and false for any other pattern.
func (e Like) Prefix() (string, bool) {
	p, ok := strings.CutSuffix(e.Pattern, "%")
	if !ok || strings.ContainsAny(p, "%_") {
		return "", false
	}
	return p, true
}

// quoteIdent quotes a column name when SQL needs it.
func quoteIdent(name string) string {
	plain := name != ""
	for i, r := range name {
		lowerOrDigit := r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9'
		if !lowerOrDigit {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
