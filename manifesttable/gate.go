//go:build duckdb_arrow

package manifesttable

import (
	"strings"
	"unicode"

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
// read), and EXPLAIN of such a query. The prepared statement that passed is
// the one that runs: no text is prepared twice.
//
// The gate is the first line. Behind it, every request runs on a new
// connection (no session state survives it) inside a read-only
// transaction (DuckDB refuses writes to any database in it), and the
// engine that serves queries holds nothing durable state derives from.

// classify prepares q's single statement on conn, or refuses it.
func classify(conn *duckConn, q string) (mapping.PreparedStatement, error) {
	return classifyDepth(conn, q, 0)
}

func classifyDepth(conn *duckConn, q string, depth int) (mapping.PreparedStatement, error) {
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
			return ps, nserror.New(nserror.PermissionDenied, "%s", refusalText(word))
		}
		return ps, err
	}
	typ := mapping.PreparedStatementType(ps)
	switch {
	case typ == mapping.StatementTypeSelect:
		return ps, nil
	case typ == mapping.StatementTypeExplain && depth == 0:
		// EXPLAIN ANALYZE runs its statement: what it explains must
		// pass on its own.
		body, ok := explainBody(q)
		if !ok {
			mapping.DestroyPrepare(&ps)
			return ps, nserror.New(nserror.PermissionDenied, "flightns cannot tell what this EXPLAIN explains: write EXPLAIN [ANALYZE] [(options)] SELECT …")
		}
		inner, err := classifyDepth(conn, body, depth+1)
		if err != nil {
			mapping.DestroyPrepare(&ps)
			return ps, err
		}
		mapping.DestroyPrepare(&inner)
		return ps, nil
	}
	mapping.DestroyPrepare(&ps)
	return ps, refusal(typ)
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

// refusal is the error for a statement of type typ that is not a query.
func refusal(typ mapping.StatementType) error {
	name, ok := statementNames[typ]
	if !ok {
		name = "an unknown type"
	}
	return nserror.New(nserror.PermissionDenied, "%s", refusalText(name))
}

func refusalText(name string) string {
	return name + " statements are refused: flightns SQL only reads (one SELECT, WITH, VALUES, TABLE, DESCRIBE, SHOW, SUMMARIZE, read-only PRAGMA, or EXPLAIN of a query); change the catalog with the namespace operations (Flight actions such as CreateNamespace, DeclareTable, CreateTableVersion, or REST)"
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
// list of options. Only whitespace, comments and leading semicolons may
// come between them; anything else (a string, a quote) is not understood
// and reported as not ok.
func explainBody(q string) (string, bool) {
	s := skipSpace(q, true)
	word, rest := leadingWord(s)
	if !strings.EqualFold(word, "EXPLAIN") {
		return "", false
	}
	s = skipSpace(rest, false)
	if word, rest := leadingWord(s); strings.EqualFold(word, "ANALYZE") || strings.EqualFold(word, "ANALYSE") {
		s = skipSpace(rest, false)
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
				s = skipSpace(s[i+1:], false)
				break
			}
		}
		if depth != 0 {
			return "", false
		}
	}
	if s == "" {
		return "", false
	}
	return s, true
}

// skipSpace skips whitespace and comments (and, with semicolons, empty
// statements) at the start of s; an unterminated comment leaves "".
func skipSpace(s string, semicolons bool) string {
	for {
		t := strings.TrimLeftFunc(s, unicode.IsSpace)
		switch {
		case strings.HasPrefix(t, "--"):
			i := strings.IndexByte(t, '\n')
			if i < 0 {
				return ""
			}
			t = t[i+1:]
		case strings.HasPrefix(t, "/*"):
			i := strings.Index(t, "*/")
			if i < 0 || strings.Contains(t[2:i], "/*") {
				return "" // nested comments: not understood
			}
			t = t[i+2:]
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
