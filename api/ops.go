package api

// The operations flightns serves, by the names the Lance Namespace
// specification gives them (flightns's own: UndropNamespace, UndropTable,
// CleanupTable and the grants). A name is an operation's identity on
// every surface: the Flight action's type, the metrics' op label, and the
// key of the server's operations registry the REST routes are built from.
const (
	OpCreateNamespace          = "CreateNamespace"
	OpListNamespaces           = "ListNamespaces"
	OpDescribeNamespace        = "DescribeNamespace"
	OpNamespaceExists          = "NamespaceExists"
	OpDropNamespace            = "DropNamespace"
	OpUndropNamespace          = "UndropNamespace"
	OpListTables               = "ListTables"
	OpListAllTables            = "ListAllTables"
	OpDeclareTable             = "DeclareTable"
	OpCreateEmptyTable         = "CreateEmptyTable"
	OpRegisterTable            = "RegisterTable"
	OpDescribeTable            = "DescribeTable"
	OpTableExists              = "TableExists"
	OpDropTable                = "DropTable"
	OpUndropTable              = "UndropTable"
	OpDeregisterTable          = "DeregisterTable"
	OpRenameTable              = "RenameTable"
	OpListTableVersions        = "ListTableVersions"
	OpCreateTableVersion       = "CreateTableVersion"
	OpDescribeTableVersion     = "DescribeTableVersion"
	OpBatchDeleteTableVersions = "BatchDeleteTableVersions"
	OpListTableTags            = "ListTableTags"
	OpGetTableTagVersion       = "GetTableTagVersion"
	OpCreateTableTag           = "CreateTableTag"
	OpUpdateTableTag           = "UpdateTableTag"
	OpDeleteTableTag           = "DeleteTableTag"
	OpListTableBranches        = "ListTableBranches"
	OpCreateTableBranch        = "CreateTableBranch"
	OpDeleteTableBranch        = "DeleteTableBranch"
	OpRestoreTable             = "RestoreTable"
	OpGetTableStats            = "GetTableStats"
	OpBatchCreateTableVersions = "BatchCreateTableVersions"
	OpBatchCommitTables        = "BatchCommitTables"
	OpCleanupTable             = "CleanupTable"
	OpCreateNamespaceGrant     = "CreateNamespaceGrant"
	OpDeleteNamespaceGrant     = "DeleteNamespaceGrant"
	OpListNamespaceGrants      = "ListNamespaceGrants"
)

// The operations of partitioned tables (flightns's own; the models are
// package planner's), served beside the ones above.
const (
	OpCreatePartitionedTable   = "CreatePartitionedTable"
	OpDescribePartitionedTable = "DescribePartitionedTable"
	OpEvolvePartitionSpec      = "EvolvePartitionSpec"
	OpResolvePartition         = "ResolvePartition"
	OpCommitPartitions         = "CommitPartitions"
	OpPlanScan                 = "PlanScan"
)

// Empty is the reply of the operations that answer only by succeeding
// (NamespaceExists, TableExists): {} as JSON; the REST adapter sends no
// body at all, as the spec has it.
type Empty struct{}
