package flightserver

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
)

// jdbcMetadata answers java.sql.DatabaseMetaData the way the Flight SQL
// JDBC driver's ArrowDatabaseMetadata does (apache/arrow-java,
// flight/flight-sql-jdbc-core/src/main/java/org/apache/arrow/driver/jdbc/
// ArrowDatabaseMetadata.java): one GetSqlInfo of every id, cached, each
// value cast to a Java class with no conversion (line 781; a missing id
// becomes 0, false or "", lines 788-806), and the supports* answers read
// from bitmasks by SqlInfoOptionsUtils.doesBitmaskTranslateToEnum
// ((bitmask >> enum) & 1, its line 42).
type jdbcMetadata struct {
	t    *testing.T
	info map[flightsql.SqlInfo]any
}

// The Java classes the driver casts to, as the decoded Go values.
func (m jdbcMetadata) cast(id flightsql.SqlInfo, zero any) any {
	m.t.Helper()
	v, ok := m.info[id]
	if !ok {
		return zero
	}
	if fmt.Sprintf("%T", v) != fmt.Sprintf("%T", zero) {
		m.t.Errorf("SqlInfo %s: %T cannot be cast to the driver's %T (ClassCastException)", id, v, zero)
		return zero
	}
	return v
}

func (m jdbcMetadata) boolean(id flightsql.SqlInfo) bool      { return m.cast(id, false).(bool) }
func (m jdbcMetadata) str(id flightsql.SqlInfo) string        { return m.cast(id, "").(string) }
func (m jdbcMetadata) long(id flightsql.SqlInfo) int64        { return m.cast(id, int64(0)).(int64) }
func (m jdbcMetadata) integer(id flightsql.SqlInfo) int32     { return m.cast(id, int32(0)).(int32) }
func (m jdbcMetadata) list(id flightsql.SqlInfo) []string     { return m.cast(id, []string{}).([]string) }
func (m jdbcMetadata) bit(id flightsql.SqlInfo, e int32) bool { return (m.integer(id)>>e)&1 == 1 }

// decodeSqlInfo reads GetSqlInfo's dense union into Go values: string,
// bool, int64, int32, []string and map[int32][]int32, by type code.
func decodeSqlInfo(t *testing.T, recs []arrow.RecordBatch) map[flightsql.SqlInfo]any {
	t.Helper()
	got := map[flightsql.SqlInfo]any{}
	for _, r := range recs {
		ids := r.Column(0).(*array.Uint32)
		u := r.Column(1).(*array.DenseUnion)
		for i := 0; i < int(r.NumRows()); i++ {
			child, off := u.Field(u.ChildID(i)), int(u.ValueOffset(i))
			var v any
			switch c := child.(type) {
			case *array.String:
				v = c.Value(off)
			case *array.Boolean:
				v = c.Value(off)
			case *array.Int64:
				v = c.Value(off)
			case *array.Int32:
				v = c.Value(off)
			case *array.List:
				vals := c.ListValues().(*array.String)
				start, end := c.ValueOffsets(off)
				l := []string{}
				for j := start; j < end; j++ {
					l = append(l, vals.Value(int(j)))
				}
				v = l
			case *array.Map:
				v = map[int32][]int32{}
			default:
				t.Fatalf("SqlInfo %d: union child %T", ids.Value(i), child)
			}
			got[flightsql.SqlInfo(ids.Value(i))] = v
		}
	}
	return got
}

// Issue 32: every DatabaseMetaData answer the JDBC driver derives from
// SqlInfo, as DBeaver reads it, is what flightns does. The line numbers
// are ArrowDatabaseMetadata.java's.
func TestJDBCDatabaseMetaDataAnswers(t *testing.T) {
	e := start(t)
	c := e.client()
	ctx := context.Background()
	info, err := c.GetSqlInfo(ctx, nil)
	_, recs := fetch(t, ctx, c, info, err)
	m := jdbcMetadata{t: t, info: decodeSqlInfo(t, recs)}

	any3 := func(id flightsql.SqlInfo, es ...int32) bool { // checkEnumLevel, line 828
		for _, e := range es {
			if m.bit(id, e) {
				return true
			}
		}
		return false
	}
	answers := []struct {
		method string
		got    any
		want   any
	}{
		{"getDatabaseProductName (184)", m.str(flightsql.SqlInfoFlightSqlServerName), "flightns"},
		{"getIdentifierQuoteString (194)", m.str(flightsql.SqlInfoIdentifierQuoteChar), `"`},
		{"isReadOnly (199)", m.boolean(flightsql.SqlInfoFlightSqlServerReadOnly), true},
		{"getSQLKeywords has PIVOT (205)", len(m.list(flightsql.SqlInfoKeywords)) > 0, true},
		{"getNumericFunctions (212)", len(m.list(flightsql.SqlInfoNumericFunctions)) > 0, true},
		{"getSearchStringEscape (239)", m.str(flightsql.SqlInfoSearchStringEscape), `\`},
		{"supportsColumnAliasing (249)", m.boolean(flightsql.SqlInfoSupportsColumnAliasing), true},
		// No {fn CONVERT(...)} escape: an empty map (259).
		{"supportsConvert (259)", len(m.cast(flightsql.SqlInfoSupportsConvert, map[int32][]int32{}).(map[int32][]int32)) > 0, false},
		{"supportsGroupBy (303)", m.integer(flightsql.SqlInfoSupportedGroupBy) != 0, true},
		{"supportsGroupByUnrelated (309)", m.bit(flightsql.SqlInfoSupportedGroupBy, int32(pb.SqlSupportedGroupBy_SQL_GROUP_BY_UNRELATED)), true},
		{"supportsLikeEscapeClause (315)", m.boolean(flightsql.SqlInfoSupportsLikeEscapeClause), true},
		{"supportsMinimumSQLGrammar (326)", any3(flightsql.SqlInfoSupportedGrammar, int32(gramExtended), int32(gramCore), int32(gramMinimum)), true},
		{"supportsCoreSQLGrammar (338)", any3(flightsql.SqlInfoSupportedGrammar, int32(gramExtended), int32(gramCore)), true},
		{"supportsExtendedSQLGrammar (348)", m.bit(flightsql.SqlInfoSupportedGrammar, int32(gramExtended)), false},
		{"supportsANSI92EntryLevelSQL (354)", any3(flightsql.SqlInfoANSI92SupportedLevel, int32(ansiEntry), int32(ansiIntermediate), int32(ansiFull)), true},
		{"supportsANSI92IntermediateSQL (369)", any3(flightsql.SqlInfoANSI92SupportedLevel, int32(ansiEntry), int32(ansiIntermediate)), true},
		{"supportsANSI92FullSQL (381)", m.bit(flightsql.SqlInfoANSI92SupportedLevel, int32(ansiFull)), false},
		{"supportsOuterJoins (393)", m.integer(flightsql.SqlInfoOuterJoinsSupportLevel) != 0, true},
		{"supportsFullOuterJoins (400)", m.bit(flightsql.SqlInfoOuterJoinsSupportLevel, int32(pb.SqlOuterJoinsSupportLevel_SQL_FULL_OUTER_JOINS)), true},
		{"supportsLimitedOuterJoins (406)", m.bit(flightsql.SqlInfoOuterJoinsSupportLevel, int32(pb.SqlOuterJoinsSupportLevel_SQL_LIMITED_OUTER_JOINS)), true},
		{"getSchemaTerm (412)", m.str(flightsql.SqlInfoSchemaTerm), "schema"},
		{"isCatalogAtStart (427)", m.boolean(flightsql.SqlInfoCatalogAtStart), true},
		// Read-only, no procedures, indexes or privileges to define.
		{"supportsSchemasInProcedureCalls (432)", m.bit(flightsql.SqlInfoSchemasSupportedActions, int32(inProcedureCalls)), false},
		{"supportsSchemasInIndexDefinitions (439)", m.bit(flightsql.SqlInfoSchemasSupportedActions, int32(inIndexDefinitions)), false},
		{"supportsCatalogsInIndexDefinitions (453)", m.bit(flightsql.SqlInfoCatalogsSupportedActions, int32(inIndexDefinitions)), false},
		{"supportsPositionedDelete (467)", m.bit(flightsql.SqlInfoSupportedPositionedCommands, int32(pb.SqlSupportedPositionedCommands_SQL_POSITIONED_DELETE)), false},
		{"supportsResultSetType(FORWARD_ONLY) (486)", m.bit(flightsql.SqlInfoSupportedResultSetTypes, int32(forwardOnly)), true},
		{"supportsResultSetType(SCROLL_INSENSITIVE) (489)", m.bit(flightsql.SqlInfoSupportedResultSetTypes, int32(scrollInsensitive)), false},
		{"supportsSelectForUpdate (502)", m.boolean(flightsql.SqlInfoSelectForUpdateSupported), false},
		{"supportsStoredProcedures (507)", m.boolean(flightsql.SqlInfoStoredProceduresSupported), false},
		{"supportsSubqueriesInComparisons (512)", m.bit(flightsql.SqlInfoSupportedSubqueries, int32(subComparisons)), true},
		{"supportsSubqueriesInExists (518)", m.bit(flightsql.SqlInfoSupportedSubqueries, int32(subExists)), true},
		{"supportsSubqueriesInIns (524)", m.bit(flightsql.SqlInfoSupportedSubqueries, int32(subIns)), true},
		{"supportsSubqueriesInQuantifieds (530)", m.bit(flightsql.SqlInfoSupportedSubqueries, int32(subQuantifieds)), true},
		{"supportsCorrelatedSubqueries (536)", m.boolean(flightsql.SqlInfoCorrelatedSubqueriesSupported), true},
		{"supportsUnion (543)", m.integer(flightsql.SqlInfoSupportedUnions) != 0, true},
		{"supportsUnionAll (549)", m.bit(flightsql.SqlInfoSupportedUnions, int32(pb.SqlSupportedUnions_SQL_UNION_ALL)), true},
		{"getMaxColumnNameLength (567)", m.long(flightsql.SqlInfoMaxColumnNameLen), int64(0)},
		{"getMaxStatementLength (647)", m.long(flightsql.SqlInfoMaxStatementLen), int64(e.srv.limits.MaxMessageBytes)},
		{"getMaxStatements (653)", m.long(flightsql.SqlInfoMaxStatements) > 0, true},
		{"getDefaultTransactionIsolation (675)", m.long(flightsql.SqlInfoDefaultTransactionIsolation), int64(0)}, // Connection.TRANSACTION_NONE
		{"supportsTransactions (681)", m.boolean(flightsql.SqlInfoTransactionsSupported), false},
		// The default level is one the driver says is supported.
		{"supportsTransactionIsolationLevel(NONE) (692)", m.bit(flightsql.SqlInfoSupportedTransactionsIsolationlevels, int32(isoNone)), true},
		{"supportsTransactionIsolationLevel(SERIALIZABLE) (704)", m.bit(flightsql.SqlInfoSupportedTransactionsIsolationlevels, int32(isoSerializable)), false},
		{"supportsBatchUpdates (726)", m.boolean(flightsql.SqlInfoBatchUpdatesSupported), false},
		{"supportsNamedParameters (736)", m.boolean(flightsql.SqlInfoNamedParametersSupported), false},
	}
	for _, a := range answers {
		if a.got != a.want {
			t.Errorf("%s: %v, want %v", a.method, a.got, a.want)
		}
	}
}

const (
	gramMinimum        = pb.SupportedSqlGrammar_SQL_MINIMUM_GRAMMAR
	gramCore           = pb.SupportedSqlGrammar_SQL_CORE_GRAMMAR
	gramExtended       = pb.SupportedSqlGrammar_SQL_EXTENDED_GRAMMAR
	ansiEntry          = pb.SupportedAnsi92SqlGrammarLevel_ANSI92_ENTRY_SQL
	ansiIntermediate   = pb.SupportedAnsi92SqlGrammarLevel_ANSI92_INTERMEDIATE_SQL
	ansiFull           = pb.SupportedAnsi92SqlGrammarLevel_ANSI92_FULL_SQL
	inProcedureCalls   = pb.SqlSupportedElementActions_SQL_ELEMENT_IN_PROCEDURE_CALLS
	inIndexDefinitions = pb.SqlSupportedElementActions_SQL_ELEMENT_IN_INDEX_DEFINITIONS
	forwardOnly        = pb.SqlSupportedResultSetType_SQL_RESULT_SET_TYPE_FORWARD_ONLY
	scrollInsensitive  = pb.SqlSupportedResultSetType_SQL_RESULT_SET_TYPE_SCROLL_INSENSITIVE
	subComparisons     = pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_COMPARISONS
	subExists          = pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_EXISTS
	subIns             = pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_INS
	subQuantifieds     = pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_QUANTIFIEDS
	isoNone            = pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_NONE
	isoSerializable    = pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_SERIALIZABLE
)
