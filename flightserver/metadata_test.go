package flightserver

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func ptrTo[T any](v T) *T { return &v }

func strOption(s string) *flight.SessionOptionValue {
	v, err := flight.NewSessionOptionValue(s)
	if err != nil {
		panic(err)
	}
	return &v
}

func TestCatalogsSchemasAndTablesFollowTheirFilters(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()

	info, err := c.GetCatalogs(ctx)
	schema, recs := fetch(t, ctx, c, info, err)
	if !schema.Equal(schema_ref.Catalogs) {
		t.Fatalf("catalogs schema %v", schema)
	}
	if got := column(t, recs, "catalog_name"); !slices.Equal(got, []string{"flightns"}) {
		t.Fatalf("catalogs %v", got)
	}

	for _, c2 := range []struct {
		catalog, pattern *string
		want             []string
	}{
		{nil, nil, []string{"main"}},
		{ptrTo("flightns"), ptrTo("%"), []string{"main"}},
		{ptrTo("flightns"), ptrTo("m_i_"), []string{"main"}},
		{ptrTo("flightns"), ptrTo("ma\\_n"), nil},
		{ptrTo("other"), nil, nil},
		{nil, ptrTo("x%"), nil},
		{ptrTo(""), nil, nil},                                // "": what has no catalog (issue 32, item 6)
		{ptrTo("FlightNS"), ptrTo("MAIN"), []string{"main"}}, // names ignore case, as SQL's do
		{nil, ptrTo(""), nil},                                // "": what has no schema
	} {
		info, err := c.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{Catalog: c2.catalog, DbSchemaFilterPattern: c2.pattern})
		schema, recs := fetch(t, ctx, c, info, err)
		if !schema.Equal(schema_ref.DBSchemas) {
			t.Fatalf("schemas schema %v", schema)
		}
		if got := column(t, recs, "db_schema_name"); !slices.Equal(got, c2.want) {
			t.Fatalf("GetDbSchemas(%v, %v) = %v, want %v", c2.catalog, c2.pattern, got, c2.want)
		}
	}

	for _, c2 := range []struct {
		pattern *string
		types   []string
		want    []string
	}{
		{nil, nil, []string{"__manifest", "namespaces", "tables", "table_versions", "dropped", "table_maintenance"}},
		{ptrTo("%"), []string{"TABLE"}, []string{"__manifest"}},
		{ptrTo("%"), []string{"view"}, []string{"namespaces", "tables", "table_versions", "dropped", "table_maintenance"}},
		{ptrTo("table%"), nil, []string{"tables", "table_versions", "table_maintenance"}},
		{ptrTo("\\_\\_manifest"), nil, []string{"__manifest"}},
		{ptrTo("_ables"), nil, []string{"tables"}},
		{ptrTo("%s"), nil, []string{"namespaces", "tables", "table_versions"}},
		{ptrTo("_objects"), nil, nil}, // internal tables are not listed
		{ptrTo("nothing"), nil, nil},
	} {
		info, err := c.GetTables(ctx, &flightsql.GetTablesOpts{TableNameFilterPattern: c2.pattern, TableTypes: c2.types})
		_, recs := fetch(t, ctx, c, info, err)
		if got := column(t, recs, "table_name"); !slices.Equal(got, c2.want) {
			t.Fatalf("GetTables(%v, %v) = %v, want %v", c2.pattern, c2.types, got, c2.want)
		}
	}

	info, err = c.GetTableTypes(ctx)
	_, recs = fetch(t, ctx, c, info, err)
	if got := column(t, recs, "table_type"); !slices.Equal(got, []string{"TABLE", "VIEW"}) {
		t.Fatalf("table types %v", got)
	}
}

func TestGetTablesIncludesSchemasAnnotatedForJDBC(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()
	info, err := c.GetTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	schema, recs := fetch(t, ctx, c, info, err)
	if !schema.Equal(schema_ref.TablesWithIncludedSchema) {
		t.Fatalf("schema %v", schema)
	}
	found := map[string]*arrow.Schema{}
	for _, r := range recs {
		names := r.Column(2).(*array.String)
		blobs := r.Column(4).(*array.Binary)
		for i := 0; i < int(r.NumRows()); i++ {
			s, err := flight.DeserializeSchema(blobs.Value(i), memory.DefaultAllocator)
			if err != nil {
				t.Fatalf("%s: %v", names.Value(i), err)
			}
			found[names.Value(i)] = s
		}
	}
	tv := found["table_versions"]
	if tv == nil {
		t.Fatalf("no table_versions in %v", found)
	}
	want := map[string]string{"table_id": "VARCHAR", "version": "UBIGINT", "manifest_path": "VARCHAR", "committed_at": "TIMESTAMP WITH TIME ZONE"}
	for col, typ := range want {
		idx := tv.FieldIndices(col)
		if len(idx) == 0 {
			t.Fatalf("table_versions has no %s: %v", col, tv)
		}
		fmd := tv.Field(idx[0]).Metadata
		md := flightsql.ColumnMetadata{Data: &fmd}
		if got, _ := md.TypeName(); got != typ {
			t.Errorf("%s type name %q, want %q", col, got, typ)
		}
		if got, _ := md.TableName(); got != "table_versions" {
			t.Errorf("%s table name %q", col, got)
		}
		if got, _ := md.CatalogName(); got != "flightns" {
			t.Errorf("%s catalog name %q", col, got)
		}
		if ro, ok := md.IsReadOnly(); !ok || !ro {
			t.Errorf("%s not marked read-only", col)
		}
	}
	m := found["__manifest"]
	if m == nil || len(m.FieldIndices("object_id")) == 0 || len(m.FieldIndices("object_type")) == 0 {
		t.Fatalf("__manifest schema %v", m)
	}
	// Issue 32, item 7: key and NOT NULL columns say so (JDBC's NULLABLE
	// comes from the field's nullability), numbers carry a precision.
	for _, c := range []struct {
		s        *arrow.Schema
		col      string
		nullable bool
	}{{tv, "table_id", false}, {tv, "version", false}, {tv, "manifest_path", true},
		{m, "object_id", false}, {m, "object_type", false}, {m, "location", true}, {found["namespaces"], "object_id", false}} {
		if f := c.s.Field(c.s.FieldIndices(c.col)[0]); f.Nullable != c.nullable {
			t.Errorf("%s nullable %v, want %v", c.col, f.Nullable, c.nullable)
		}
	}
	vmd := tv.Field(tv.FieldIndices("version")[0]).Metadata
	vcm := flightsql.ColumnMetadata{Data: &vmd}
	if p, ok := vcm.Precision(); !ok || p != 20 {
		t.Errorf("version (UBIGINT) precision %d %v, want 20", p, ok)
	}
}

func TestPrimaryKeysAndEmptyForeignKeys(t *testing.T) {
	e := start(t)
	c := e.client()
	ctx := context.Background()
	cat, sch := "flightns", "main"
	for table, want := range map[string][]string{
		"table_versions": {"table_id", "version"},
		"namespaces":     {"object_id"},
		"__manifest":     nil,
		"nope":           nil,
		// DBeaver loads a whole schema's keys with "%" (issue 32, item 3).
		"%":              {"object_id", "object_id", "table_id", "version", "drop_id", "object_id"},
		"dropped":        {"drop_id", "object_id"},
		"TABLE_VERSIONS": {"table_id", "version"},
	} {
		info, err := c.GetPrimaryKeys(ctx, flightsql.TableRef{Catalog: &cat, DBSchema: &sch, Table: table})
		schema, recs := fetch(t, ctx, c, info, err)
		if !schema.Equal(schema_ref.PrimaryKeys) {
			t.Fatalf("schema %v", schema)
		}
		if got := column(t, recs, "column_name"); !slices.Equal(got, want) {
			t.Fatalf("keys of %s: %v, want %v", table, got, want)
		}
	}
	ref := flightsql.TableRef{Table: "tables"}
	for name, get := range map[string]func() (*flight.FlightInfo, error){
		"exported": func() (*flight.FlightInfo, error) { return c.GetExportedKeys(ctx, ref) },
		"imported": func() (*flight.FlightInfo, error) { return c.GetImportedKeys(ctx, ref) },
		"cross":    func() (*flight.FlightInfo, error) { return c.GetCrossReference(ctx, ref, ref) },
	} {
		info, err := get()
		schema, recs := fetch(t, ctx, c, info, err)
		if !schema.Equal(schema_ref.ImportedExportedKeysAndCrossReference) {
			t.Fatalf("%s schema %v", name, schema)
		}
		for _, r := range recs {
			if r.NumRows() != 0 {
				t.Fatalf("%s keys: %d rows", name, r.NumRows())
			}
		}
	}
}

func TestXdbcTypeInfoDescribesTheColumnTypes(t *testing.T) {
	e := start(t)
	c := e.client()
	ctx := context.Background()
	info, err := c.GetXdbcTypeInfo(ctx, nil)
	schema, recs := fetch(t, ctx, c, info, err)
	if !schema.Equal(schema_ref.XdbcTypeInfo) {
		t.Fatalf("schema %v", schema)
	}
	names := column(t, recs, "type_name")
	for _, want := range []string{"VARCHAR", "BIGINT", "UBIGINT", "TIMESTAMP WITH TIME ZONE", "BOOLEAN"} {
		if !slices.Contains(names, want) {
			t.Fatalf("types %v lack %s", names, want)
		}
	}
	varchar := int32(12)
	info, err = c.GetXdbcTypeInfo(ctx, &varchar)
	_, recs = fetch(t, ctx, c, info, err)
	if got := column(t, recs, "type_name"); !slices.Equal(got, []string{"VARCHAR"}) {
		t.Fatalf("VARCHAR types %v", got)
	}
}

// sqlInfoKinds is the value type of each SqlInfo id, as the dense
// union's type code: 0 string, 1 bool, 2 int64, 3 int32, 4 string list,
// 5 int32→int32 list map: the Flight SQL specification's
// (FlightSql.proto), but where the JDBC driver casts to another class
// (arrow-java flight-sql-jdbc-core ArrowDatabaseMetadata.java:675,
// getDefaultTransactionIsolation: Long.class); it casts with no
// conversion (line 781: desiredType.cast).
var sqlInfoKinds = func() map[flightsql.SqlInfo]arrow.UnionTypeCode {
	m := map[flightsql.SqlInfo]arrow.UnionTypeCode{}
	set := func(code arrow.UnionTypeCode, ids ...flightsql.SqlInfo) {
		for _, id := range ids {
			m[id] = code
		}
	}
	set(0, flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerVersion,
		flightsql.SqlInfoFlightSqlServerSubstraitMinVersion, flightsql.SqlInfoFlightSqlServerSubstraitMaxVersion,
		flightsql.SqlInfoFlightSqlServerArrowVersion, flightsql.SqlInfoIdentifierQuoteChar,
		flightsql.SqlInfoSearchStringEscape, flightsql.SqlInfoExtraNameChars, flightsql.SqlInfoSchemaTerm,
		flightsql.SqlInfoProcedureTerm, flightsql.SqlInfoCatalogTerm)
	set(1, flightsql.SqlInfoFlightSqlServerReadOnly, flightsql.SqlInfoFlightSqlServerSql,
		flightsql.SqlInfoFlightSqlServerSubstrait, flightsql.SqlInfoFlightSqlServerCancel,
		flightsql.SqlInfoFlightSqlServerBulkIngestion, flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported,
		flightsql.SqlInfoDDLCatalog, flightsql.SqlInfoDDLSchema, flightsql.SqlInfoDDLTable,
		flightsql.SqlInfoAllTablesAreASelectable, flightsql.SqlInfoSupportsColumnAliasing,
		flightsql.SqlInfoNullPlusNullIsNull, flightsql.SqlInfoSupportsTableCorrelationNames,
		flightsql.SqlInfoSupportsDifferentTableCorrelationNames, flightsql.SqlInfoSupportsExpressionsInOrderBy,
		flightsql.SqlInfoSupportsOrderByUnrelated, flightsql.SqlInfoSupportsLikeEscapeClause,
		flightsql.SqlInfoSupportsNonNullableColumns, flightsql.SqlInfoSupportsIntegrityEnhancementFacility,
		flightsql.SqlInfoCatalogAtStart, flightsql.SqlInfoSelectForUpdateSupported,
		flightsql.SqlInfoStoredProceduresSupported, flightsql.SqlInfoCorrelatedSubqueriesSupported,
		flightsql.SqlInfoMaxRowSizeIncludesBlobs, flightsql.SqlInfoTransactionsSupported,
		flightsql.SqlInfoDataDefinitionCausesTransactionCommit, flightsql.SqlInfoDataDefinitionsInTransactionsIgnored,
		flightsql.SqlInfoBatchUpdatesSupported, flightsql.SqlInfoSavePointsSupported,
		flightsql.SqlInfoNamedParametersSupported, flightsql.SqlInfoLocatorsUpdateCopy,
		flightsql.SqlInfoStoredFunctionsUsingCallSyntaxSupported)
	set(2, flightsql.SqlInfoMaxBinaryLiteralLen, flightsql.SqlInfoMaxCharLiteralLen,
		flightsql.SqlInfoMaxColumnNameLen, flightsql.SqlInfoMaxColumnsInGroupBy, flightsql.SqlInfoMaxColumnsInIndex,
		flightsql.SqlInfoMaxColumnsInOrderBy, flightsql.SqlInfoMaxColumnsInSelect, flightsql.SqlInfoMaxColumnsInTable,
		flightsql.SqlInfoMaxConnections, flightsql.SqlInfoMaxCursorNameLen, flightsql.SqlInfoMaxIndexLen,
		flightsql.SqlInfoDBSchemaNameLen, flightsql.SqlInfoMaxProcedureNameLen, flightsql.SqlInfoMaxCatalogNameLen,
		flightsql.SqlInfoMaxRowSize, flightsql.SqlInfoMaxStatementLen, flightsql.SqlInfoMaxStatements,
		flightsql.SqlInfoMaxTableNameLen, flightsql.SqlInfoMaxTablesInSelect, flightsql.SqlInfoMaxUsernameLen,
		flightsql.SqlInfoDefaultTransactionIsolation) // the JDBC driver casts it to Long
	set(3, flightsql.SqlInfoFlightSqlServerTransaction, flightsql.SqlInfoFlightSqlServerStatementTimeout,
		flightsql.SqlInfoFlightSqlServerTransactionTimeout, flightsql.SqlInfoIdentifierCase,
		flightsql.SqlInfoQuotedIdentifierCase, flightsql.SqlInfoNullOrdering, flightsql.SqlInfoSupportedGroupBy,
		flightsql.SqlInfoSupportedGrammar, flightsql.SqlInfoANSI92SupportedLevel, flightsql.SqlInfoOuterJoinsSupportLevel,
		flightsql.SqlInfoSchemasSupportedActions, flightsql.SqlInfoCatalogsSupportedActions,
		flightsql.SqlInfoSupportedPositionedCommands, flightsql.SqlInfoSupportedSubqueries,
		flightsql.SqlInfoSupportedUnions,
		flightsql.SqlInfoSupportedTransactionsIsolationlevels, flightsql.SqlInfoSupportedResultSetTypes,
		flightsql.SqlInfoSupportedConcurrenciesForResultSetUnspecified,
		flightsql.SqlInfoSupportedConcurrenciesForResultSetForwardOnly,
		flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollSensitive,
		flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollInsensitive)
	set(4, flightsql.SqlInfoKeywords, flightsql.SqlInfoNumericFunctions, flightsql.SqlInfoStringFunctions,
		flightsql.SqlInfoSystemFunctions, flightsql.SqlInfoDateTimeFunctions)
	set(5, flightsql.SqlInfoSupportsConvert)
	return m
}()

// readSqlInfo returns each id's union type code and value (as ValueStr).
func readSqlInfo(t *testing.T, recs []arrow.RecordBatch) map[flightsql.SqlInfo]arrow.UnionTypeCode {
	t.Helper()
	got := map[flightsql.SqlInfo]arrow.UnionTypeCode{}
	for _, r := range recs {
		ids := r.Column(0).(*array.Uint32)
		vals := r.Column(1).(*array.DenseUnion)
		for i := 0; i < int(r.NumRows()); i++ {
			got[flightsql.SqlInfo(ids.Value(i))] = vals.TypeCode(i)
		}
	}
	return got
}

// TestJDBCConnectAndBrowseSequence replays what the Flight SQL JDBC driver
// (DBeaver's) does on connect, on browsing the tree, on opening a table's
// columns and on running a query, and checks every field it reads.
func TestJDBCConnectAndBrowseSequence(t *testing.T) {
	e := start(t, withAuth)
	e.seed()
	c := e.client()
	ctx, err := c.Client.AuthenticateBasicToken(context.Background(), "ana", "ana-pw")
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}

	// catalog=flightns in the URL becomes a session option.
	res, err := c.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{
		"catalog": strOption("flightns"),
	}})
	if err != nil || len(res.GetErrors()) > 0 {
		t.Fatalf("catalog session option: %v %v", err, res.GetErrors())
	}

	// DatabaseMetaData: GetSqlInfo with no ids, once, cached.
	info, err := c.GetSqlInfo(ctx, nil)
	schema, recs := fetch(t, ctx, c, info, err)
	if !schema.Equal(schema_ref.SqlInfo) {
		t.Fatalf("sql info schema %v", schema)
	}
	got := readSqlInfo(t, recs)
	var missing, wrong []string
	for id, kind := range sqlInfoKinds {
		k, ok := got[id]
		switch {
		case !ok:
			missing = append(missing, id.String())
		case k != kind:
			wrong = append(wrong, id.String())
		}
	}
	sort.Strings(missing)
	sort.Strings(wrong)
	if len(missing) > 0 || len(wrong) > 0 {
		t.Fatalf("sql info: missing %v; wrong type %v", missing, wrong)
	}

	// The navigator: catalogs, schemas, tables.
	info, err = c.GetCatalogs(ctx)
	_, recs = fetch(t, ctx, c, info, err)
	if got := column(t, recs, "catalog_name"); !slices.Equal(got, []string{"flightns"}) {
		t.Fatalf("catalogs %v", got)
	}
	cat := "flightns"
	info, err = c.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{Catalog: &cat, DbSchemaFilterPattern: ptrTo("%")})
	_, recs = fetch(t, ctx, c, info, err)
	if got := column(t, recs, "db_schema_name"); !slices.Equal(got, []string{"main"}) {
		t.Fatalf("schemas %v", got)
	}
	sch := "main"
	info, err = c.GetTables(ctx, &flightsql.GetTablesOpts{Catalog: &cat, DbSchemaFilterPattern: &sch, TableNameFilterPattern: ptrTo("%")})
	_, recs = fetch(t, ctx, c, info, err)
	if got := column(t, recs, "table_type"); len(got) != 6 { // __manifest and its five views
		t.Fatalf("table types %v", got)
	}
	// Columns of one table: GetTables with its schema.
	info, err = c.GetTables(ctx, &flightsql.GetTablesOpts{Catalog: &cat, DbSchemaFilterPattern: &sch,
		TableNameFilterPattern: ptrTo("namespaces"), IncludeSchema: true})
	_, recs = fetch(t, ctx, c, info, err)
	if len(recs) != 1 || recs[0].NumRows() != 1 {
		t.Fatalf("GetTables namespaces with schema: %v", recs)
	}
	info, err = c.GetPrimaryKeys(ctx, flightsql.TableRef{Catalog: &cat, DBSchema: &sch, Table: "namespaces"})
	_, recs = fetch(t, ctx, c, info, err)
	if got := column(t, recs, "column_name"); !slices.Equal(got, []string{"object_id"}) {
		t.Fatalf("keys %v", got)
	}
	// DBeaver's generic model loads a whole schema's constraints with
	// table "%" (getPrimaryKeys, then getImportedKeys).
	info, err = c.GetPrimaryKeys(ctx, flightsql.TableRef{Catalog: &cat, DBSchema: &sch, Table: "%"})
	_, recs = fetch(t, ctx, c, info, err)
	if got := column(t, recs, "table_name"); !slices.Equal(got, []string{"namespaces", "tables", "table_versions", "table_versions", "dropped", "dropped"}) {
		t.Fatalf("the schema's keys %v", got)
	}
	info, err = c.GetImportedKeys(ctx, flightsql.TableRef{Catalog: &cat, DBSchema: &sch, Table: "%"})
	if _, recs = fetch(t, ctx, c, info, err); len(recs) > 0 && recs[0].NumRows() != 0 {
		t.Fatalf("imported keys %v", recs)
	}

	// The SQL editor: every query is prepared.
	p, err := c.Prepare(ctx, `SELECT * FROM "flightns"."main"."namespaces" ORDER BY object_id`)
	if err != nil {
		t.Fatal(err)
	}
	if p.DatasetSchema() == nil || p.DatasetSchema().NumFields() == 0 {
		t.Fatal("no dataset schema: JDBC would run the query as an update")
	}
	if upd, ok := p.IsUpdate(); !ok || upd {
		t.Fatalf("IsUpdate %v/%v", upd, ok)
	}
	info, err = p.Execute(ctx)
	_, recs = fetch(t, ctx, c, info, err)
	if got := column(t, recs, "object_id"); !slices.Equal(got, []string{"ops", "sales"}) {
		t.Fatalf("rows %v", got)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.srv.prepared.len(); n != 0 {
		t.Fatalf("%d prepared statements left open after close", n)
	}

	// A query with a bound parameter (PreparedStatement.setString).
	p, err = c.Prepare(ctx, "SELECT object_id FROM namespaces WHERE object_id = ?")
	if err != nil {
		t.Fatal(err)
	}
	rec := record("sales")
	p.SetParameters(rec)
	rec.Release()
	info, err = p.Execute(ctx)
	_, recs = fetch(t, ctx, c, info, err)
	if got := column(t, recs, "object_id"); !slices.Equal(got, []string{"sales"}) {
		t.Fatalf("bound rows %v", got)
	}
	_ = p.Close(ctx)

	// Connection.close ends the session.
	if res, err := c.CloseSession(ctx, &flight.CloseSessionRequest{}); err != nil || res.GetStatus() == flight.CloseSessionResultNotCloseable {
		t.Fatalf("close session: %v, %v", res, err)
	}
}

func TestSessionOptionsReportUnknownNamesAndValues(t *testing.T) {
	e := start(t)
	c := e.client()
	ctx := context.Background()
	res, err := c.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{
		"catalog": strOption("flightns"), "schema": strOption("main"), "colour": strOption("blue"), "CATALOG": strOption("other"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	errs := res.GetErrors()
	if len(errs) != 2 || errs["colour"].GetValue() != flight.SetSessionOptionsResultErrorInvalidName ||
		errs["CATALOG"].GetValue() != flight.SetSessionOptionsResultErrorInvalidValue {
		t.Fatalf("errors %v", errs)
	}
	got, err := c.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetSessionOptions()["catalog"].GetStringValue() != "flightns" {
		t.Fatalf("session %v", got.GetSessionOptions())
	}
	if _, err := c.CloseSession(ctx, &flight.CloseSessionRequest{}); err != nil {
		t.Fatal(err)
	}
}

// Issue 32 (items 1, 2, 4, 5): ADBC's GetInfo asks for the vendor name and
// the Substrait versions in one GetSqlInfo, which must answer all of
// them (it failed whole with NotFound for id 6); the statement timeout is
// a prepared handle's idle lifetime, as the spec defines it, not a
// query's time limit; and identifiers are case-insensitive, as DuckDB
// resolves them (it keeps their case). The JDBC driver casts the default
// isolation to Long (ArrowDatabaseMetadata.java:675) and reads the outer
// join level as a bitmask (supportsFullOuterJoins: bit 2).
func TestSqlInfoAnswersWhatClientsAskTogether(t *testing.T) {
	e := start(t)
	c := e.client()
	ctx := context.Background()
	ids := []flightsql.SqlInfo{flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerSubstraitMinVersion,
		flightsql.SqlInfoFlightSqlServerSubstraitMaxVersion, flightsql.SqlInfoFlightSqlServerStatementTimeout,
		flightsql.SqlInfoIdentifierCase, flightsql.SqlInfoDefaultTransactionIsolation, flightsql.SqlInfoOuterJoinsSupportLevel}
	info, err := c.GetSqlInfo(ctx, ids)
	_, recs := fetch(t, ctx, c, info, err)
	got := map[flightsql.SqlInfo]string{}
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			got[flightsql.SqlInfo(r.Column(0).(*array.Uint32).Value(i))] = r.Column(1).ValueStr(i)
		}
	}
	want := map[flightsql.SqlInfo]string{
		flightsql.SqlInfoFlightSqlServerName:                `[0,"flightns"]`, // [union type code, value]
		flightsql.SqlInfoFlightSqlServerSubstraitMinVersion: `[0,""]`,
		flightsql.SqlInfoFlightSqlServerSubstraitMaxVersion: `[0,""]`,
		flightsql.SqlInfoFlightSqlServerStatementTimeout:    `[3,900000]`,
		flightsql.SqlInfoDefaultTransactionIsolation:        `[2,0]`, // Long in JDBC (item 2)
		flightsql.SqlInfoOuterJoinsSupportLevel:             `[3,6]`, // bits 1 and 2: limited and full
		flightsql.SqlInfoIdentifierCase:                     fmt.Sprintf(`[3,%d]`, int32(flightsql.SqlCaseSensitivityCaseInsensitive)),
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("SqlInfo %d (%s): %s, want %s", int32(id), id, got[id], w)
		}
	}
}
