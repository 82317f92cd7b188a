package flightserver

import (
	"context"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
)

// Catalog browsing: one catalog (flightns), one schema (main), and the
// relations manifesttable.Relations lists. Every answer uses the schema_ref
// schemas and is one batch.

// oneBatch streams a single batch built by fill over schema.
func (q *sqlServer) oneBatch(schema *arrow.Schema, fill func(b *array.RecordBuilder)) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(q.s.alloc, schema)
	defer b.Release()
	fill(b)
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: b.NewRecordBatch()}
	close(ch)
	return schema, ch, nil
}

func appendStrings(b array.Builder, vs ...string) {
	sb := b.(*array.StringBuilder)
	for _, v := range vs {
		sb.Append(v)
	}
}

// GetFlightInfoCatalogs plans GetCatalogs.
func (q *sqlServer) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.infoFor(desc, schema_ref.Catalogs), nil
}

// DoGetCatalogs returns the one catalog.
func (q *sqlServer) DoGetCatalogs(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return q.oneBatch(schema_ref.Catalogs, func(b *array.RecordBuilder) {
		appendStrings(b.Field(0), manifesttable.DatabaseName)
	})
}

// catalogMatches reports whether a catalog filter (exact) admits
// flightns: nil does not narrow the search; "" asks for what has no
// catalog (nothing here), as the specification and JDBC say; names are
// compared ignoring case, as SQL resolves them (and as SetSessionOptions
// takes them).
func catalogMatches(c *string) bool {
	return c == nil || strings.EqualFold(*c, manifesttable.DatabaseName)
}

// schemaMatches is catalogMatches for an exact schema name.
func schemaMatches(s *string) bool {
	return s == nil || strings.EqualFold(*s, manifesttable.SchemaName)
}

// GetFlightInfoSchemas plans GetDbSchemas.
func (q *sqlServer) GetFlightInfoSchemas(_ context.Context, _ flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.infoFor(desc, schema_ref.DBSchemas), nil
}

// DoGetDBSchemas returns the one schema, if the filters admit it.
func (q *sqlServer) DoGetDBSchemas(_ context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return q.oneBatch(schema_ref.DBSchemas, func(b *array.RecordBuilder) {
		if catalogMatches(cmd.GetCatalog()) && likeMatch(cmd.GetDBSchemaFilterPattern(), manifesttable.SchemaName) {
			appendStrings(b.Field(0), manifesttable.DatabaseName)
			appendStrings(b.Field(1), manifesttable.SchemaName)
		}
	})
}

// GetFlightInfoTables plans GetTables.
func (q *sqlServer) GetFlightInfoTables(_ context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return q.infoFor(desc, schema_ref.TablesWithIncludedSchema), nil
	}
	return q.infoFor(desc, schema_ref.Tables), nil
}

// DoGetTables lists the relations the filters admit, with their Arrow
// schemas (each column annotated for JDBC) when asked.
func (q *sqlServer) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var rels []manifesttable.Relation
	if catalogMatches(cmd.GetCatalog()) && likeMatch(cmd.GetDBSchemaFilterPattern(), manifesttable.SchemaName) {
		for _, r := range manifesttable.Relations {
			if likeMatch(cmd.GetTableNameFilterPattern(), r.Name) && typeAdmitted(cmd.GetTableTypes(), r.Type) {
				rels = append(rels, r)
			}
		}
	}
	schemas := make([][]byte, len(rels))
	if cmd.GetIncludeSchema() {
		for i, r := range rels {
			s, err := q.relationSchema(ctx, r)
			if err != nil {
				return nil, nil, err
			}
			schemas[i] = flight.SerializeSchema(s, q.s.alloc)
		}
	}
	out := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		out = schema_ref.TablesWithIncludedSchema
	}
	return q.oneBatch(out, func(b *array.RecordBuilder) {
		for i, r := range rels {
			appendStrings(b.Field(0), manifesttable.DatabaseName)
			appendStrings(b.Field(1), manifesttable.SchemaName)
			appendStrings(b.Field(2), r.Name)
			appendStrings(b.Field(3), r.Type)
			if cmd.GetIncludeSchema() {
				b.Field(4).(*array.BinaryBuilder).Append(schemas[i])
			}
		}
	})
}

// relationSchema is a relation's Arrow schema with the Flight SQL column
// metadata JDBC's ResultSetMetaData and DatabaseMetaData.getColumns read.
func (q *sqlServer) relationSchema(ctx context.Context, r manifesttable.Relation) (*arrow.Schema, error) {
	s, _, err := q.s.schema(ctx, "SELECT * FROM "+sqlengine.QuoteIdent(r.Name)) // unqualified: a scoped caller's resolve in its schema
	if err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		md := flightsql.NewColumnMetadataBuilder().
			CatalogName(manifesttable.DatabaseName).SchemaName(manifesttable.SchemaName).TableName(r.Name).
			TypeName(sqlTypeName(f.Type)).IsReadOnly(true).IsSearchable(true).IsAutoIncrement(false).
			IsCaseSensitive(f.Type.ID() == arrow.STRING)
		if p, sc, ok := precisionOf(f.Type); ok {
			md = md.Precision(p).Scale(sc)
		}
		f.Metadata = md.Metadata()
		// DuckDB's views lose NOT NULL: the catalog knows its keys.
		if slices.Contains(r.Key, f.Name) || slices.Contains(r.NotNull, f.Name) {
			f.Nullable = false
		}
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil), nil
}

// precisionOf is a numeric type's precision (decimal digits) and scale,
// as JDBC's ResultSetMetaData.getPrecision and getScale report them.
func precisionOf(t arrow.DataType) (precision, scale int32, ok bool) {
	switch t.ID() {
	case arrow.INT8, arrow.UINT8:
		return 3, 0, true
	case arrow.INT16, arrow.UINT16:
		return 5, 0, true
	case arrow.INT32, arrow.UINT32:
		return 10, 0, true
	case arrow.INT64:
		return 19, 0, true
	case arrow.UINT64:
		return 20, 0, true
	case arrow.FLOAT32:
		return 7, 0, true
	case arrow.FLOAT64:
		return 15, 0, true
	case arrow.DECIMAL128, arrow.DECIMAL256:
		d := t.(arrow.DecimalType)
		return d.GetPrecision(), d.GetScale(), true
	}
	return 0, 0, false
}

// typeAdmitted applies GetTables' table-type filter (empty admits all).
func typeAdmitted(types []string, t string) bool {
	if len(types) == 0 {
		return true
	}
	for _, x := range types {
		if strings.EqualFold(x, t) {
			return true
		}
	}
	return false
}

// likeMatch matches a JDBC/Flight SQL search pattern: % any run, _ any one
// character, \ escapes the next one, case ignored (as SQL resolves
// names); nil admits everything, "" only an empty name (none here).
func likeMatch(pattern *string, s string) bool {
	if pattern == nil {
		return true
	}
	return like([]rune(strings.ToLower(*pattern)), []rune(strings.ToLower(s)))
}

func like(p, s []rune) bool {
	for len(p) > 0 {
		switch {
		case p[0] == '%':
			for len(p) > 0 && p[0] == '%' {
				p = p[1:]
			}
			if len(p) == 0 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if like(p, s[i:]) {
					return true
				}
			}
			return false
		case len(s) == 0:
			return false
		case p[0] == '_':
		case p[0] == '\\' && len(p) > 1:
			p = p[1:]
			if p[0] != s[0] {
				return false
			}
		case p[0] != s[0]:
			return false
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}

// GetFlightInfoTableTypes plans GetTableTypes.
func (q *sqlServer) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.infoFor(desc, schema_ref.TableTypes), nil
}

// DoGetTableTypes returns TABLE and VIEW.
func (q *sqlServer) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return q.oneBatch(schema_ref.TableTypes, func(b *array.RecordBuilder) {
		appendStrings(b.Field(0), "TABLE", "VIEW")
	})
}

// GetFlightInfoPrimaryKeys plans GetPrimaryKeys.
func (q *sqlServer) GetFlightInfoPrimaryKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.infoFor(desc, schema_ref.PrimaryKeys), nil
}

// DoGetPrimaryKeys returns the key columns of the relation named.
func (q *sqlServer) DoGetPrimaryKeys(_ context.Context, ref flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return q.oneBatch(schema_ref.PrimaryKeys, func(b *array.RecordBuilder) {
		if !catalogMatches(ref.Catalog) || !schemaMatches(ref.DBSchema) {
			return
		}
		for _, r := range manifesttable.Relations {
			// DBeaver asks for "%" to load a whole schema's keys: the
			// table is taken as a pattern.
			if !likeMatch(&ref.Table, r.Name) {
				continue
			}
			for i, col := range r.Key {
				appendStrings(b.Field(0), manifesttable.DatabaseName)
				appendStrings(b.Field(1), manifesttable.SchemaName)
				appendStrings(b.Field(2), r.Name)
				appendStrings(b.Field(3), col)
				b.Field(4).(*array.Int32Builder).Append(int32(i + 1))
				appendStrings(b.Field(5), r.Name+"_pkey")
			}
		}
	})
}

// There are no foreign keys: the three key commands answer empty.

// GetFlightInfoExportedKeys plans GetExportedKeys.
func (q *sqlServer) GetFlightInfoExportedKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.infoFor(desc, schema_ref.ExportedKeys), nil
}

// DoGetExportedKeys returns no keys.
func (q *sqlServer) DoGetExportedKeys(context.Context, flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return q.oneBatch(schema_ref.ExportedKeys, func(*array.RecordBuilder) {})
}

// GetFlightInfoImportedKeys plans GetImportedKeys.
func (q *sqlServer) GetFlightInfoImportedKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.infoFor(desc, schema_ref.ImportedKeys), nil
}

// DoGetImportedKeys returns no keys.
func (q *sqlServer) DoGetImportedKeys(context.Context, flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return q.oneBatch(schema_ref.ImportedKeys, func(*array.RecordBuilder) {})
}

// GetFlightInfoCrossReference plans GetCrossReference.
func (q *sqlServer) GetFlightInfoCrossReference(_ context.Context, _ flightsql.CrossTableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.infoFor(desc, schema_ref.CrossReference), nil
}

// DoGetCrossReference returns no keys.
func (q *sqlServer) DoGetCrossReference(context.Context, flightsql.CrossTableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return q.oneBatch(schema_ref.CrossReference, func(*array.RecordBuilder) {})
}

// SetSessionOptions accepts the options a JDBC URL or ADBC connection
// sets: catalog (flightns) and schema (main). Other names and values are
// reported per option, as the protocol asks, without failing the call.
func (q *sqlServer) SetSessionOptions(_ context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	errs := map[string]*flight.SetSessionOptionsResultError{}
	for name, v := range req.GetSessionOptions() {
		want, known := sessionDefaults[strings.ToLower(name)]
		switch {
		case !known:
			errs[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidName}
		case v.GetOptionValue() != nil && !strings.EqualFold(v.GetStringValue(), want):
			errs[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
		}
	}
	return &flight.SetSessionOptionsResult{Errors: errs}, nil
}

var sessionDefaults = map[string]string{"catalog": manifesttable.DatabaseName, "schema": manifesttable.SchemaName}

// GetSessionOptions returns the fixed session: catalog flightns, schema main.
func (q *sqlServer) GetSessionOptions(context.Context, *flight.GetSessionOptionsRequest) (*flight.GetSessionOptionsResult, error) {
	opts := map[string]any{}
	for k, v := range sessionDefaults {
		opts[k] = v
	}
	vals, err := flight.NewSessionOptionValues(opts)
	if err != nil {
		return nil, err
	}
	return &flight.GetSessionOptionsResult{SessionOptions: vals}, nil
}

// CloseSession succeeds: sessions hold nothing.
func (q *sqlServer) CloseSession(context.Context, *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	return &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}, nil
}
