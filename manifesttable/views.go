package manifesttable

import (
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/nserror"
)

// DatabaseName is the SQL catalog that holds __manifest and its views.
const DatabaseName = sqlengine.DatabaseName

// SchemaName is the SQL schema that holds them.
const SchemaName = sqlengine.SchemaName

// ErrReadOnly refuses what would change data through SQL (updates,
// ingestion): SQL only reads the catalog.
var ErrReadOnly = nserror.New(nserror.PermissionDenied,
	"flightns SQL is read-only: only a single SELECT runs; change the catalog with the namespace operations (Flight actions such as CreateNamespace, DeclareTable, CreateTableVersion, or REST)")

// Relation is one of the relations SQL users see in the flightns.main
// schema; the engine also holds internal tables (named with a leading
// underscore) that browsing tools do not list.
type Relation struct {
	Name string
	// Type is "TABLE" for __manifest itself and "VIEW" for the views over it.
	Type string
	// Key is the columns that identify a row, when the relation has a key.
	Key []string
	// NotNull is the columns never NULL beyond Key's.
	NotNull     []string
	Description string
}

// Relations lists the relations of the SQL surface, __manifest first.
var Relations = []Relation{
	{Name: "__manifest", Type: "TABLE", NotNull: []string{ColObjectID, ColObjectType},
		Description: "every namespace, table and table version of the catalog, one row each"},
	{Name: "namespaces", Type: "VIEW", Key: []string{ColObjectID},
		Description: "the namespaces: id, properties, creation time"},
	{Name: "tables", Type: "VIEW", Key: []string{ColObjectID},
		Description: "the tables: id, location, properties"},
	{Name: "table_versions", Type: "VIEW", Key: []string{"table_id", "version"},
		Description: "every committed version of every table, with its manifest"},
	{Name: "dropped", Type: "VIEW", Key: []string{"drop_id", ColObjectID},
		Description: "what drops kept recoverable (undrop), one row per dropped namespace or table, until gc purges it"},
	// No key: main's row has a NULL branch.
	{Name: "table_maintenance", Type: "VIEW", NotNull: []string{"table_id", "versions"},
		Description: "each table's upkeep, for main and each Lance branch: version records, the latest version's fragments and deleted rows, the last cleanup and compaction, whether it needs a compaction"},
}
