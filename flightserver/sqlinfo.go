package flightserver

import (
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
)

// sqlInfo is what GetSqlInfo answers. JDBC asks for everything at once,
// caches it, and casts each value to a Java class with no conversion
// (ArrowDatabaseMetadata): so every id below has the type the driver
// casts it to — the specification's (int32 ordinals and bitmasks, int64
// limits, booleans, strings, string lists) but for two ids where the
// driver, like the Java reference server, departs from it (562, 528) —
// and every boolean and integer DBeaver reads is present.
func sqlInfo(version string, limits Limits, maxQueries int) map[flightsql.SqlInfo]any {
	bits := func(vs ...int32) int32 {
		var m int32
		for _, v := range vs {
			m |= 1 << v
		}
		return m
	}
	return map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:         "flightns",
		flightsql.SqlInfoFlightSqlServerVersion:      version,
		flightsql.SqlInfoFlightSqlServerArrowVersion: "18.8.0",
		flightsql.SqlInfoFlightSqlServerReadOnly:     true,
		flightsql.SqlInfoFlightSqlServerSql:          true,
		flightsql.SqlInfoFlightSqlServerSubstrait:    false,
		// No Substrait: no version (ADBC asks for them with the vendor name).
		flightsql.SqlInfoFlightSqlServerSubstraitMinVersion:         "",
		flightsql.SqlInfoFlightSqlServerSubstraitMaxVersion:         "",
		flightsql.SqlInfoFlightSqlServerTransaction:                 int32(flightsql.SqlTransactionNone),
		flightsql.SqlInfoFlightSqlServerCancel:                      false,
		flightsql.SqlInfoFlightSqlServerBulkIngestion:               false,
		flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported: false,
		// The spec's statement timeout is a prepared handle's: how long
		// it lives unused (a query's own time limit is no SqlInfo).
		flightsql.SqlInfoFlightSqlServerStatementTimeout:   int32(limits.PreparedTTL.Milliseconds()),
		flightsql.SqlInfoFlightSqlServerTransactionTimeout: int32(0),

		flightsql.SqlInfoDDLCatalog: false,
		flightsql.SqlInfoDDLSchema:  false,
		flightsql.SqlInfoDDLTable:   false,
		// DuckDB keeps an identifier's case and resolves it ignoring case.
		flightsql.SqlInfoIdentifierCase:          int32(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoIdentifierQuoteChar:     `"`,
		flightsql.SqlInfoQuotedIdentifierCase:    int32(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoAllTablesAreASelectable: true,
		flightsql.SqlInfoNullOrdering:            int32(flightsql.SqlNullOrderingSortAtEnd),
		flightsql.SqlInfoKeywords:                keywords,
		flightsql.SqlInfoNumericFunctions:        numericFunctions,
		flightsql.SqlInfoStringFunctions:         stringFunctions,
		flightsql.SqlInfoSystemFunctions:         systemFunctions,
		flightsql.SqlInfoDateTimeFunctions:       datetimeFunctions,
		flightsql.SqlInfoSearchStringEscape:      `\`,
		flightsql.SqlInfoExtraNameChars:          "",

		flightsql.SqlInfoSupportsConvert:                        map[int32][]int32{},
		flightsql.SqlInfoSupportsColumnAliasing:                 true,
		flightsql.SqlInfoNullPlusNullIsNull:                     true,
		flightsql.SqlInfoSupportsTableCorrelationNames:          true,
		flightsql.SqlInfoSupportsDifferentTableCorrelationNames: false,
		flightsql.SqlInfoSupportsExpressionsInOrderBy:           true,
		flightsql.SqlInfoSupportsOrderByUnrelated:               true,
		flightsql.SqlInfoSupportedGroupBy: bits(int32(pb.SqlSupportedGroupBy_SQL_GROUP_BY_UNRELATED),
			int32(pb.SqlSupportedGroupBy_SQL_GROUP_BY_BEYOND_SELECT)),
		flightsql.SqlInfoSupportsLikeEscapeClause:   true,
		flightsql.SqlInfoSupportsNonNullableColumns: true,
		flightsql.SqlInfoSupportedGrammar: bits(int32(pb.SupportedSqlGrammar_SQL_MINIMUM_GRAMMAR),
			int32(pb.SupportedSqlGrammar_SQL_CORE_GRAMMAR)),
		flightsql.SqlInfoANSI92SupportedLevel: bits(int32(pb.SupportedAnsi92SqlGrammarLevel_ANSI92_ENTRY_SQL),
			int32(pb.SupportedAnsi92SqlGrammarLevel_ANSI92_INTERMEDIATE_SQL)),
		flightsql.SqlInfoSupportsIntegrityEnhancementFacility: false,
		// A bitmask, not the spec's ordinal: the JDBC driver tests its bits
		// (supportsLimitedOuterJoins: bit 1, supportsFullOuterJoins: bit
		// 2), as the Java SqlInfoBuilder writes it.
		flightsql.SqlInfoOuterJoinsSupportLevel: bits(int32(pb.SqlOuterJoinsSupportLevel_SQL_LIMITED_OUTER_JOINS),
			int32(pb.SqlOuterJoinsSupportLevel_SQL_FULL_OUTER_JOINS)),
		flightsql.SqlInfoSchemaTerm:     "schema",
		flightsql.SqlInfoProcedureTerm:  "procedure",
		flightsql.SqlInfoCatalogTerm:    "catalog",
		flightsql.SqlInfoCatalogAtStart: true,
		// Read-only, with no procedures, indexes or privileges to name a
		// schema or catalog in.
		flightsql.SqlInfoSchemasSupportedActions:     int32(0),
		flightsql.SqlInfoCatalogsSupportedActions:    int32(0),
		flightsql.SqlInfoSupportedPositionedCommands: int32(0),
		flightsql.SqlInfoSelectForUpdateSupported:    false,
		flightsql.SqlInfoStoredProceduresSupported:   false,
		flightsql.SqlInfoSupportedSubqueries: bits(int32(pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_COMPARISONS),
			int32(pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_EXISTS), int32(pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_INS),
			int32(pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_QUANTIFIEDS)),
		flightsql.SqlInfoCorrelatedSubqueriesSupported: true,
		flightsql.SqlInfoSupportedUnions: bits(int32(pb.SqlSupportedUnions_SQL_UNION),
			int32(pb.SqlSupportedUnions_SQL_UNION_ALL)),

		// 0 means "no limit or unknown", as in JDBC.
		flightsql.SqlInfoMaxBinaryLiteralLen:     int64(0),
		flightsql.SqlInfoMaxCharLiteralLen:       int64(0),
		flightsql.SqlInfoMaxColumnNameLen:        int64(0),
		flightsql.SqlInfoMaxColumnsInGroupBy:     int64(0),
		flightsql.SqlInfoMaxColumnsInIndex:       int64(0),
		flightsql.SqlInfoMaxColumnsInOrderBy:     int64(0),
		flightsql.SqlInfoMaxColumnsInSelect:      int64(0),
		flightsql.SqlInfoMaxColumnsInTable:       int64(0),
		flightsql.SqlInfoMaxConnections:          int64(0),
		flightsql.SqlInfoMaxCursorNameLen:        int64(0),
		flightsql.SqlInfoMaxIndexLen:             int64(0),
		flightsql.SqlInfoDBSchemaNameLen:         int64(0),
		flightsql.SqlInfoMaxProcedureNameLen:     int64(0),
		flightsql.SqlInfoMaxCatalogNameLen:       int64(0),
		flightsql.SqlInfoMaxRowSize:              int64(0),
		flightsql.SqlInfoMaxRowSizeIncludesBlobs: false,
		flightsql.SqlInfoMaxStatementLen:         int64(limits.MaxMessageBytes),
		flightsql.SqlInfoMaxStatements:           int64(maxQueries),
		flightsql.SqlInfoMaxTableNameLen:         int64(0),
		flightsql.SqlInfoMaxTablesInSelect:       int64(0),
		flightsql.SqlInfoMaxUsernameLen:          int64(0),

		// int64, not the spec's int32: the JDBC driver casts it to Long
		// (ArrowDatabaseMetadata.getDefaultTransactionIsolation), as the
		// Java SqlInfoBuilder sends it; an Integer throws there.
		flightsql.SqlInfoDefaultTransactionIsolation: int64(pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_NONE),
		flightsql.SqlInfoTransactionsSupported:       false,
		// The default level, NONE, is the one supported.
		flightsql.SqlInfoSupportedTransactionsIsolationlevels: bits(
			int32(pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_NONE)),
		flightsql.SqlInfoDataDefinitionCausesTransactionCommit:         false,
		flightsql.SqlInfoDataDefinitionsInTransactionsIgnored:          true,
		flightsql.SqlInfoSupportedResultSetTypes:                       bits(int32(pb.SqlSupportedResultSetType_SQL_RESULT_SET_TYPE_FORWARD_ONLY)),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetUnspecified: int32(0),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetForwardOnly: bits(
			int32(pb.SqlSupportedResultSetConcurrency_SQL_RESULT_SET_CONCURRENCY_READ_ONLY)),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollSensitive:   int32(0),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollInsensitive: int32(0),
		flightsql.SqlInfoBatchUpdatesSupported:                               false,
		flightsql.SqlInfoSavePointsSupported:                                 false,
		flightsql.SqlInfoNamedParametersSupported:                            false,
		flightsql.SqlInfoLocatorsUpdateCopy:                                  false,
		flightsql.SqlInfoStoredFunctionsUsingCallSyntaxSupported:             false,
	}
}

// keywords are DuckDB's reserved words beyond SQL:2003's, as JDBC's
// getSQLKeywords wants them.
var keywords = []string{
	"ANTI", "ASOF", "ATTACH", "COLUMNS", "DESCRIBE", "EXCLUDE", "GLOB", "ILIKE",
	"LAMBDA", "MACRO", "PIVOT", "POSITIONAL", "PRAGMA", "QUALIFY", "REPLACE",
	"SEMI", "SIMILAR", "STRUCT", "SUMMARIZE", "UNPIVOT",
}

var numericFunctions = []string{
	"ABS", "ACOS", "ASIN", "ATAN", "ATAN2", "CBRT", "CEIL", "CEILING", "COS", "COT",
	"DEGREES", "EVEN", "EXP", "FLOOR", "GREATEST", "LEAST", "LN", "LOG", "LOG10", "LOG2",
	"MOD", "PI", "POW", "POWER", "RADIANS", "RANDOM", "ROUND", "SIGN", "SIN", "SQRT",
	"TAN", "TRUNC",
}

var stringFunctions = []string{
	"ASCII", "CHR", "CONCAT", "CONCAT_WS", "CONTAINS", "ENDS_WITH", "FORMAT", "INSTR",
	"LCASE", "LEFT", "LENGTH", "LIKE_ESCAPE", "LOWER", "LPAD", "LTRIM", "POSITION",
	"REGEXP_EXTRACT", "REGEXP_MATCHES", "REGEXP_REPLACE", "REPEAT", "REPLACE", "REVERSE",
	"RIGHT", "RPAD", "RTRIM", "SPLIT_PART", "STARTS_WITH", "STRING_SPLIT", "STRPOS",
	"SUBSTR", "SUBSTRING", "TRIM", "UCASE", "UPPER",
}

var systemFunctions = []string{"COALESCE", "CURRENT_DATABASE", "CURRENT_SCHEMA", "IFNULL", "NULLIF", "TYPEOF", "VERSION"}

var datetimeFunctions = []string{
	"AGE", "CURRENT_DATE", "CURRENT_TIMESTAMP", "DATE_DIFF", "DATE_PART", "DATE_SUB",
	"DATE_TRUNC", "DATEDIFF", "DATEPART", "DAY", "DAYNAME", "DAYOFWEEK", "DAYOFYEAR",
	"EPOCH", "EPOCH_MS", "EXTRACT", "HOUR", "MAKE_DATE", "MAKE_TIMESTAMP", "MINUTE",
	"MONTH", "MONTHNAME", "NOW", "QUARTER", "SECOND", "STRFTIME", "STRPTIME", "TO_TIMESTAMP",
	"WEEK", "YEAR",
}
