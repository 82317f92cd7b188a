package namespace

// Op is one Lance Namespace operation flightns serves: the one table the
// REST routes, the Flight actions (with their roles and descriptions) and
// the docs' route tables are built from or checked against (planner.Ops
// is its counterpart for partitioned tables).
type Op struct {
	// Name is the spec's operation name (also the metrics' op label).
	Name string
	// Path is the REST route after /v1/; {id} stands for the object id.
	Path string
	// Write is whether the operation changes the catalog: it needs the
	// write role (reads need the read role), and POST on REST.
	Write bool
	// Action is whether it is also a Flight action (the REST-only
	// CreateEmptyTable is a deprecated alias of DeclareTable).
	Action bool
	// Desc is one line for ListActions.
	Desc string
}

// Ops are the operations, in the spec's order of kinds.
var Ops = []Op{
	{"CreateNamespace", "namespace/{id}/create", true, true, "Create a namespace (mode create, exist_ok or overwrite)."},
	{"ListNamespaces", "namespace/{id}/list", false, true, "List the child namespaces of a namespace, paged."},
	{"DescribeNamespace", "namespace/{id}/describe", false, true, "Describe a namespace: its properties."},
	{"NamespaceExists", "namespace/{id}/exists", false, true, "Succeed if the namespace exists, fail with NamespaceNotFound if not."},
	{"DropNamespace", "namespace/{id}/drop", true, true, "Drop a namespace (behavior restrict or cascade)."},
	{"ListTables", "namespace/{id}/table/list", false, true, "List the tables of a namespace, paged."},
	{"ListAllTables", "table", false, true, "List every table of the catalog, paged."},
	{"DeclareTable", "table/{id}/declare", true, true, "Declare a table: reserve its name and location before its first version."},
	{"CreateEmptyTable", "table/{id}/create-empty", true, false, "Deprecated: DeclareTable."},
	{"RegisterTable", "table/{id}/register", true, true, "Register an existing Lance table at a location."},
	{"DescribeTable", "table/{id}/describe", false, true, "Describe a table: location, latest version, properties."},
	{"TableExists", "table/{id}/exists", false, true, "Succeed if the table exists, fail with TableNotFound if not."},
	{"DropTable", "table/{id}/drop", true, true, "Remove a table from the catalog and delete its data."},
	{"DeregisterTable", "table/{id}/deregister", true, true, "Remove a table from the catalog, keeping its data."},
	{"RenameTable", "table/{id}/rename", true, true, "Rename a table, possibly into another namespace; its location stays."},
	{"ListTableVersions", "table/{id}/version/list", false, true, "List a table's versions, paged, ascending or descending."},
	{"CreateTableVersion", "table/{id}/version/create", true, true, "Commit a staged manifest as the table's next version (put-if-not-exists)."},
	{"DescribeTableVersion", "table/{id}/version/describe", false, true, "Describe one version of a table (the latest when none is named)."},
	{"BatchDeleteTableVersions", "table/{id}/version/delete", true, true, "Delete ranges of a table's versions from the catalog."},
	{"ListTableTags", "table/{id}/tags/list", false, true, "List a table's tags (Lance's own, in its _refs/tags/), paged."},
	{"GetTableTagVersion", "table/{id}/tags/version", false, true, "The version a tag points to."},
	{"CreateTableTag", "table/{id}/tags/create", true, true, "Tag a version of the table (create-only, in Lance's format)."},
	{"UpdateTableTag", "table/{id}/tags/update", true, true, "Point an existing tag to another version."},
	{"DeleteTableTag", "table/{id}/tags/delete", true, true, "Delete a tag."},
	{"ListTableBranches", "table/{id}/branches/list", false, true, "List the branches Lance recorded for a table (its _refs/branches/), paged."},
	{"GetTableStats", "table/{id}/stats", false, true, "A table's statistics (rows, fragments, indices, bytes), read from its latest manifest."},
	{"BatchCreateTableVersions", "table/version/batch-create", true, true, "Commit versions of several tables atomically: all or none."},
	{"BatchCommitTables", "table/batch-commit", true, true, "Commit table versions, declarations and drops across tables atomically: all or none."},
}
