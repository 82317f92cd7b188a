package sqlengine

import (
	"context"
	"slices"
	"strings"
)

// A Scope limits what a query sees to the rows of some subtrees of the
// catalog: a row is in it when its object id is one of Subtrees, or
// starts with one of them and Sep. The filter is the engine's, not the
// query text's: a scoped request resolves names in the schema
// ScopedSchema, whose relations (the caller of Open creates them) filter
// by the request's scope, held in the SQL variable ScopeVariable, which
// the request's own connection sets and no query can (the gate admits
// nothing but a read); and before anything of its text runs, the text
// is screened by DuckDB's parser (screen.go) so that it names nothing but
// those relations, the table functions registered with the engine (which
// check ScopeFrom themselves) and a few functions that read no table.
type Scope struct {
	Subtrees []string `json:"subtrees"`
	Sep      string   `json:"sep"`
}

// ScopedSchema holds the relations a scoped request sees, and
// ScopeVariable the subtrees (a VARCHAR[]) they filter by.
const (
	ScopedSchema  = "scoped"
	ScopeVariable = "flightns_scope"
)

// Covers reports whether object id is in the scope.
func (s *Scope) Covers(id string) bool {
	if s == nil {
		return true
	}
	return slices.ContainsFunc(s.Subtrees, func(t string) bool {
		return id == t || strings.HasPrefix(id, t+s.Sep)
	})
}

// ScopeFilter is the SQL condition of the scoped relations: column col
// holds an object id in the request's scope.
func ScopeFilter(col, sep string) string {
	return `len(list_filter(getvariable('` + ScopeVariable + `'), lambda s: ` + col + ` = s OR starts_with(` + col + `, s || ` + quoteString(sep) + `))) > 0`
}

type scopeKey struct{}

// WithScope is ctx whose queries see only scope (nil: everything, as
// with no scope at all).
func WithScope(ctx context.Context, scope *Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

// ScopeFrom is the scope of ctx's queries (nil: everything). A table
// function learns its request's this way.
func ScopeFrom(ctx context.Context) *Scope {
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
}

// quoteString is s as an SQL string literal.
func quoteString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// setScope is the statements that open a scoped request: its names
// resolve in ScopedSchema first, and the variable holds its subtrees.
func setScope(s *Scope) string {
	items := make([]string, len(s.Subtrees))
	for i, t := range s.Subtrees {
		items[i] = quoteString(t)
	}
	return "USE " + DatabaseName + "." + ScopedSchema + "; SET VARIABLE " + ScopeVariable + " = [" + strings.Join(items, ", ") + "]::VARCHAR[]; "
}
