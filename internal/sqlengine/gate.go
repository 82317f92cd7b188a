//go:build duckdb_arrow

package sqlengine

import (
	"strings"
	"unicode"
	"unicode/utf8"

	bindings "github.com/duckdb/duckdb-go-bindings"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/flightns/flightns/nserror"
)

// The gate decides, before anything of a caller's text runs, whether the
// text is exactly one statement that only reads. DuckDB's own parser
// splits the text (duckdb_extract_statements parses and executes
// nothing); more than one statement is refused. The one statement is then
// prepared — bound and planned, still executing nothing — and its type
// read from the prepared statement: only a query passes (SELECT, and what
// DuckDB turns into one: WITH, VALUES, TABLE, FROM-first, DESCRIBE, SHOW,
// SUMMARIZE, PIVOT with its values listed, PRAGMA functions that only
// read), and EXPLAIN of such a query. Last, with its parameters bound, it
// is made a pending result in the request's read-only transaction: there
// DuckDB checks, before it schedules any work, that the statement modifies
// no database — which refuses what DuckDB types as a query but writes (a
// data-modifying WITH, an EXPLAIN ANALYZE of one). The pending result that
// passed is the one that runs: no text is prepared twice.
//
// The gate is the first line. Behind it, every request runs on a new
// connection (no session state survives it) inside a read-only
// transaction (DuckDB refuses writes to any database in it), and the
// engine that serves queries holds nothing durable state derives from.

// admitted is a statement that passed the gate: prepared, its parameters
// bound, pending. Destroy frees both.
type admitted struct {
	ps      mapping.PreparedStatement
	pending mapping.PendingResult
}

func (a *admitted) destroy() {
	mapping.DestroyPending(&a.pending)
	mapping.DestroyPrepare(&a.ps)
}

// admit passes q through the gate with args bound (nil args: those of a
// statement only planned, planningArgs): classify, then bind,
// then pend. Between bind and pend the request may still run statements of
// its own on the connection (pend opens a result on it).
func admit(conn *duckConn, q string, args []any) (*admitted, error) {
	ps, err := classify(conn, q, 0)
	if err != nil {
		return nil, err
	}
	if args == nil {
		args = planningArgs(ps)
	}
	if err := bindArgs(ps, args); err != nil {
		mapping.DestroyPrepare(&ps)
		return nil, err
	}
	return &admitted{ps: ps}, nil
}

// pend makes the admitted statement a pending result, which refuses it if
// it would modify a database; on an error the statement is destroyed.
func (a *admitted) pend() error {
	if bindings.PendingPreparedStreaming(a.ps, &a.pending) == mapping.StateError {
		err := pendingError(mapping.PendingError(a.pending))
		a.destroy()
		return err
	}
	return nil
}

// pendingError is the error of a statement that could not be made
// pending. In the read-only transaction of a request, a transaction error
// there means the statement would modify a database.
func pendingError(msg string) error {
	err := prepareError(msg)
	if name, _, _ := strings.Cut(msg, " Error: "); duckErrorTypes[name] == mapping.ErrorTypeTransaction {
		return nserror.New(nserror.PermissionDenied, "%s", refusalText("statements that write (a data-modifying WITH, an EXPLAIN of a write)"))
	}
	return err
}

// classify prepares q's single statement on conn, or refuses it; depth 1
// classifies what an EXPLAIN explains.
func classify(conn *duckConn, q string, depth int) (mapping.PreparedStatement, error) {
	var ps mapping.PreparedStatement
	var stmts mapping.ExtractedStatements
	n := mapping.ExtractStatements(conn.c, q, &stmts)
	defer mapping.DestroyExtracted(&stmts)
	if n == 0 {
		msg := mapping.ExtractStatementsError(stmts)
		if msg == "" {
			return ps, nserror.New(nserror.InvalidInput, "the SQL text holds no statement")
		}
		return ps, nserror.New(nserror.InvalidInput, "%s", strings.TrimSpace(msg))
	}
	if n > 1 {
		return ps, nserror.New(nserror.PermissionDenied,
			"the SQL text holds %d statements: flightns runs exactly one read-only statement per request", n)
	}
	if mapping.PrepareExtractedStatement(conn.c, stmts, 0, &ps) == mapping.StateError {
		err := prepareError(mapping.PrepareError(ps))
		mapping.DestroyPrepare(&ps)
		if word := leadingKeyword(q); word != "" && !queryKeywords[word] {
			// It failed to prepare, and would have been refused anyway:
			// say so rather than why it did not prepare.
			return ps, nserror.New(nserror.PermissionDenied, "%s", refusalText(word+" statements"))
		}
		return ps, err
	}
	typ := mapping.PreparedStatementType(ps)
	switch {
	case typ == mapping.StatementTypeSelect:
		return ps, nil
	case typ == mapping.StatementTypeExplain && depth == 0:
		// EXPLAIN ANALYZE runs its statement: what it explains must
		// pass on its own, writes included.
		body, ok := explainBody(q)
		if !ok {
			mapping.DestroyPrepare(&ps)
			return ps, nserror.New(nserror.PermissionDenied, "flightns cannot tell what this EXPLAIN explains: write EXPLAIN [ANALYZE] [(options)] SELECT …, with nothing but spaces between its words")
		}
		inner, err := classify(conn, body, depth+1)
		if err == nil {
			var pending mapping.PendingResult
			if bindArgs(inner, make([]any, mapping.NParams(inner))) == nil &&
				bindings.PendingPreparedStreaming(inner, &pending) == mapping.StateError {
				if perr := pendingError(mapping.PendingError(pending)); nserror.CodeOf(perr) == nserror.PermissionDenied {
					err = perr
				}
			}
			mapping.DestroyPending(&pending)
			mapping.DestroyPrepare(&inner)
		}
		if err != nil {
			mapping.DestroyPrepare(&ps)
			return ps, err
		}
		return ps, nil
	}
	mapping.DestroyPrepare(&ps)
	name, ok := statementNames[typ]
	if !ok {
		if name = leadingKeyword(q); name == "" {
			name = "this kind of"
		}
	}
	return ps, nserror.New(nserror.PermissionDenied, "%s", refusalText(name+" statements"))
}

// statementNames names DuckDB's statement types in refusals.
var statementNames = map[mapping.StatementType]string{
	mapping.StatementTypeInsert: "INSERT", mapping.StatementTypeUpdate: "UPDATE", mapping.StatementTypeExplain: "EXPLAIN",
	mapping.StatementTypeDelete: "DELETE", mapping.StatementTypePrepare: "PREPARE", mapping.StatementTypeCreate: "CREATE",
	mapping.StatementTypeExecute: "EXECUTE", mapping.StatementTypeAlter: "ALTER", mapping.StatementTypeTransaction: "TRANSACTION",
	mapping.StatementTypeCopy: "COPY", mapping.StatementTypeAnalyze: "ANALYZE", mapping.StatementTypeVariableSet: "SET VARIABLE",
	mapping.StatementTypeCreateFunc: "CREATE FUNCTION", mapping.StatementTypeDrop: "DROP", mapping.StatementTypeExport: "EXPORT",
	mapping.StatementTypePragma: "PRAGMA", mapping.StatementTypeVacuum: "VACUUM", mapping.StatementTypeCall: "CALL",
	mapping.StatementTypeSet: "SET", mapping.StatementTypeLoad: "LOAD", mapping.StatementTypeRelation: "RELATION",
	mapping.StatementTypeExtension: "EXTENSION", mapping.StatementTypeLogicalPlan: "LOGICAL PLAN",
	mapping.StatementTypeAttach: "ATTACH", mapping.StatementTypeDetach: "DETACH", mapping.StatementTypeMulti: "MULTI",
}

// refusalText says what is refused (e.g. "DROP statements") and what to
// do instead.
func refusalText(what string) string {
	return what + " are refused: flightns SQL only reads (one SELECT, WITH, VALUES, TABLE, DESCRIBE, SHOW, SUMMARIZE, read-only PRAGMA, or EXPLAIN of a query); change the catalog with the namespace operations (Flight actions such as CreateNamespace, DeclareTable, CreateTableVersion, or REST)"
}

// queryKeywords are the words a query may start with. A statement that
// fails to prepare and starts with another word is reported as refused
// (by that word) rather than by why it did not prepare.
var queryKeywords = map[string]bool{
	"SELECT": true, "WITH": true, "VALUES": true, "TABLE": true, "FROM": true, "DESCRIBE": true, "DESC": true,
	"SHOW": true, "SUMMARIZE": true, "PRAGMA": true, "EXPLAIN": true, "PIVOT": true, "UNPIVOT": true,
	"PIVOT_WIDER": true, "PIVOT_LONGER": true, "UNPIVOT_LONGER": true,
}

// leadingKeyword is the first word of q, upper-cased, after whitespace,
// comments and semicolons ("" when q starts otherwise, e.g. with "(").
func leadingKeyword(q string) string {
	word, _ := leadingWord(skipSpace(q, true))
	return strings.ToUpper(word)
}

// explainBody returns what an EXPLAIN statement explains: the text after
// EXPLAIN, an optional ANALYZE (or ANALYSE) and an optional parenthesized
// list of options. Before EXPLAIN may come whitespace, comments and
// semicolons; after it, between its words, only whitespace: what DuckDB's
// scanner and this one read differently (comments ended by a carriage
// return, nested comments, strings) must never decide which statement is
// classified. Anything else is not understood: not ok.
func explainBody(q string) (string, bool) {
	s := skipSpace(q, true)
	word, rest := leadingWord(s)
	if !strings.EqualFold(word, "EXPLAIN") || !startsWithSpace(rest) && !strings.HasPrefix(rest, "(") {
		return "", false
	}
	s = strings.TrimLeftFunc(rest, unicode.IsSpace)
	if word, rest := leadingWord(s); (strings.EqualFold(word, "ANALYZE") || strings.EqualFold(word, "ANALYSE")) &&
		(startsWithSpace(rest) || strings.HasPrefix(rest, "(")) {
		s = strings.TrimLeftFunc(rest, unicode.IsSpace)
	}
	if strings.HasPrefix(s, "(") {
		depth := 0
		for i, r := range s {
			switch r {
			case '(':
				depth++
			case ')':
				depth--
			case '\'', '"', ';', '-', '/':
				return "", false
			}
			if depth == 0 {
				s = strings.TrimLeftFunc(s[i+1:], unicode.IsSpace)
				break
			}
		}
		if depth != 0 {
			return "", false
		}
	}
	if strings.Trim(s, "; \t\r\n") == "" || strings.HasPrefix(s, "--") || strings.HasPrefix(s, "/*") {
		return "", false
	}
	return s, true
}

func startsWithSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

// skipSpace skips whitespace and comments (and, with semicolons, empty
// statements) at the start of s; an unterminated comment leaves "".
func skipSpace(s string, semicolons bool) string {
	for {
		t := strings.TrimLeftFunc(s, unicode.IsSpace)
		switch {
		case strings.HasPrefix(t, "--"):
			// DuckDB ends a line comment at either line break.
			i := strings.IndexAny(t, "\n\r")
			if i < 0 {
				return ""
			}
			t = t[i+1:]
		case strings.HasPrefix(t, "/*"):
			body, rest, closed := strings.Cut(t[2:], "*/")
			if !closed || strings.Contains(body, "/*") {
				return "" // unterminated or nested: not understood
			}
			t = rest
		case semicolons && strings.HasPrefix(t, ";"):
			t = t[1:]
		}
		if t == s {
			return s
		}
		s = t
	}
}

// leadingWord splits s into its leading run of letters and the rest.
func leadingWord(s string) (string, string) {
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}
