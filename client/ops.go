package client

import (
	"context"

	"github.com/flightns/flightns/api"
)

// routes are the REST paths of the operations, after /v1/; {id} stands
// for the object id (the server's registry has the same; a test holds
// them equal). The deprecated CreateEmptyTable is left out: DeclareTable.
var routes = map[string]string{
	api.OpCreateNamespace:          "namespace/{id}/create",
	api.OpListNamespaces:           "namespace/{id}/list",
	api.OpDescribeNamespace:        "namespace/{id}/describe",
	api.OpNamespaceExists:          "namespace/{id}/exists",
	api.OpDropNamespace:            "namespace/{id}/drop",
	api.OpUndropNamespace:          "namespace/{id}/undrop",
	api.OpListTables:               "namespace/{id}/table/list",
	api.OpListAllTables:            "table",
	api.OpDeclareTable:             "table/{id}/declare",
	api.OpRegisterTable:            "table/{id}/register",
	api.OpDescribeTable:            "table/{id}/describe",
	api.OpTableExists:              "table/{id}/exists",
	api.OpDropTable:                "table/{id}/drop",
	api.OpUndropTable:              "table/{id}/undrop",
	api.OpDeregisterTable:          "table/{id}/deregister",
	api.OpRenameTable:              "table/{id}/rename",
	api.OpListTableVersions:        "table/{id}/version/list",
	api.OpCreateTableVersion:       "table/{id}/version/create",
	api.OpDescribeTableVersion:     "table/{id}/version/describe",
	api.OpBatchDeleteTableVersions: "table/{id}/version/delete",
	api.OpListTableTags:            "table/{id}/tags/list",
	api.OpGetTableTagVersion:       "table/{id}/tags/version",
	api.OpCreateTableTag:           "table/{id}/tags/create",
	api.OpUpdateTableTag:           "table/{id}/tags/update",
	api.OpDeleteTableTag:           "table/{id}/tags/delete",
	api.OpListTableBranches:        "table/{id}/branches/list",
	api.OpCreateTableBranch:        "table/{id}/branches/create",
	api.OpDeleteTableBranch:        "table/{id}/branches/delete",
	api.OpRestoreTable:             "table/{id}/restore",
	api.OpGetTableStats:            "table/{id}/stats",
	api.OpBatchCreateTableVersions: "table/version/batch-create",
	api.OpBatchCommitTables:        "table/batch-commit",
	api.OpCleanupTable:             "table/{id}/cleanup",
	api.OpCreateNamespaceGrant:     "namespace/{id}/grants/create",
	api.OpDeleteNamespaceGrant:     "namespace/{id}/grants/delete",
	api.OpListNamespaceGrants:      "namespace/{id}/grants/list",
	api.OpClaimCompaction:          "compaction/claim",
	api.OpHeartbeatCompaction:      "compaction/heartbeat",
	api.OpCompleteCompaction:       "compaction/complete",
	api.OpFailCompaction:           "compaction/fail",
	api.OpListCompactions:          "compaction/list",
}

// CreateNamespace runs CreateNamespace: create a namespace (mode create,
// exist_ok or overwrite).
func (c *Client) CreateNamespace(ctx context.Context, req api.CreateNamespaceRequest) (*api.CreateNamespaceResponse, error) {
	return call[api.CreateNamespaceResponse](ctx, c, api.OpCreateNamespace, req.ID, req)
}

// ListNamespaces runs ListNamespaces: list the child namespaces of a
// namespace, paged.
func (c *Client) ListNamespaces(ctx context.Context, req api.ListNamespacesRequest) (*api.ListNamespacesResponse, error) {
	return call[api.ListNamespacesResponse](ctx, c, api.OpListNamespaces, req.ID, req)
}

// DescribeNamespace runs DescribeNamespace: describe a namespace: its
// properties.
func (c *Client) DescribeNamespace(ctx context.Context, req api.DescribeNamespaceRequest) (*api.DescribeNamespaceResponse, error) {
	return call[api.DescribeNamespaceResponse](ctx, c, api.OpDescribeNamespace, req.ID, req)
}

// NamespaceExists runs NamespaceExists: succeed if the namespace exists,
// fail with NamespaceNotFound if not.
func (c *Client) NamespaceExists(ctx context.Context, req api.NamespaceExistsRequest) error {
	return c.Call(ctx, api.OpNamespaceExists, req.ID, req, nil)
}

// DropNamespace runs DropNamespace: drop a namespace (behavior restrict or
// cascade).
func (c *Client) DropNamespace(ctx context.Context, req api.DropNamespaceRequest) (*api.DropNamespaceResponse, error) {
	return call[api.DropNamespaceResponse](ctx, c, api.OpDropNamespace, req.ID, req)
}

// UndropNamespace runs UndropNamespace: put a dropped namespace back with
// everything its drop removed, within the drop retention (flightns;
// drop_id: which drop, else the newest).
func (c *Client) UndropNamespace(ctx context.Context, req api.UndropNamespaceRequest) (*api.UndropResponse, error) {
	return call[api.UndropResponse](ctx, c, api.OpUndropNamespace, req.ID, req)
}

// ListTables runs ListTables: list the tables of a namespace, paged.
func (c *Client) ListTables(ctx context.Context, req api.ListTablesRequest) (*api.ListTablesResponse, error) {
	return call[api.ListTablesResponse](ctx, c, api.OpListTables, req.ID, req)
}

// ListAllTables runs ListAllTables: list every table of the catalog, paged.
func (c *Client) ListAllTables(ctx context.Context, req api.ListTablesRequest) (*api.ListTablesResponse, error) {
	return call[api.ListTablesResponse](ctx, c, api.OpListAllTables, nil, req)
}

// DeclareTable runs DeclareTable: declare a table: reserve its name and
// location before its first version.
func (c *Client) DeclareTable(ctx context.Context, req api.DeclareTableRequest) (*api.DeclareTableResponse, error) {
	return call[api.DeclareTableResponse](ctx, c, api.OpDeclareTable, req.ID, req)
}

// RegisterTable runs RegisterTable: register an existing Lance table at a
// location.
func (c *Client) RegisterTable(ctx context.Context, req api.RegisterTableRequest) (*api.RegisterTableResponse, error) {
	return call[api.RegisterTableResponse](ctx, c, api.OpRegisterTable, req.ID, req)
}

// DescribeTable runs DescribeTable: describe a table: location, latest
// version, properties.
func (c *Client) DescribeTable(ctx context.Context, req api.DescribeTableRequest) (*api.DescribeTableResponse, error) {
	return call[api.DescribeTableResponse](ctx, c, api.OpDescribeTable, req.ID, req)
}

// TableExists runs TableExists: succeed if the table exists, fail with
// TableNotFound if not.
func (c *Client) TableExists(ctx context.Context, req api.TableExistsRequest) error {
	return c.Call(ctx, api.OpTableExists, req.ID, req, nil)
}

// DropTable runs DropTable: remove a table from the catalog and delete its
// data.
func (c *Client) DropTable(ctx context.Context, req api.DropTableRequest) (*api.DropTableResponse, error) {
	return call[api.DropTableResponse](ctx, c, api.OpDropTable, req.ID, req)
}

// UndropTable runs UndropTable: put a dropped table back with its versions,
// branches and tags, within the drop retention (flightns; drop_id: which
// drop, else the newest).
func (c *Client) UndropTable(ctx context.Context, req api.UndropTableRequest) (*api.UndropResponse, error) {
	return call[api.UndropResponse](ctx, c, api.OpUndropTable, req.ID, req)
}

// DeregisterTable runs DeregisterTable: remove a table from the catalog,
// keeping its data.
func (c *Client) DeregisterTable(ctx context.Context, req api.DeregisterTableRequest) (*api.DeregisterTableResponse, error) {
	return call[api.DeregisterTableResponse](ctx, c, api.OpDeregisterTable, req.ID, req)
}

// RenameTable runs RenameTable: rename a table, possibly into another
// namespace; its location stays.
func (c *Client) RenameTable(ctx context.Context, req api.RenameTableRequest) (*api.RenameTableResponse, error) {
	return call[api.RenameTableResponse](ctx, c, api.OpRenameTable, req.ID, req)
}

// ListTableVersions runs ListTableVersions: list a table's versions, paged,
// ascending or descending.
func (c *Client) ListTableVersions(ctx context.Context, req api.ListTableVersionsRequest) (*api.ListTableVersionsResponse, error) {
	return call[api.ListTableVersionsResponse](ctx, c, api.OpListTableVersions, req.ID, req)
}

// CreateTableVersion runs CreateTableVersion: commit a staged manifest as
// the table's next version (put-if-not-exists).
func (c *Client) CreateTableVersion(ctx context.Context, req api.CreateTableVersionRequest) (*api.CreateTableVersionResponse, error) {
	return call[api.CreateTableVersionResponse](ctx, c, api.OpCreateTableVersion, req.ID, req)
}

// DescribeTableVersion runs DescribeTableVersion: describe one version of a
// table (the latest when none is named).
func (c *Client) DescribeTableVersion(ctx context.Context, req api.DescribeTableVersionRequest) (*api.DescribeTableVersionResponse, error) {
	return call[api.DescribeTableVersionResponse](ctx, c, api.OpDescribeTableVersion, req.ID, req)
}

// BatchDeleteTableVersions runs BatchDeleteTableVersions: delete ranges of
// a table's versions from the catalog.
func (c *Client) BatchDeleteTableVersions(ctx context.Context, req api.BatchDeleteTableVersionsRequest) (*api.BatchDeleteTableVersionsResponse, error) {
	return call[api.BatchDeleteTableVersionsResponse](ctx, c, api.OpBatchDeleteTableVersions, req.ID, req)
}

// ListTableTags runs ListTableTags: list a table's tags (Lance's own, in
// its _refs/tags/), paged.
func (c *Client) ListTableTags(ctx context.Context, req api.ListTableTagsRequest) (*api.ListTableTagsResponse, error) {
	return call[api.ListTableTagsResponse](ctx, c, api.OpListTableTags, req.ID, req)
}

// GetTableTagVersion runs GetTableTagVersion: the version a tag points to.
func (c *Client) GetTableTagVersion(ctx context.Context, req api.GetTableTagVersionRequest) (*api.GetTableTagVersionResponse, error) {
	return call[api.GetTableTagVersionResponse](ctx, c, api.OpGetTableTagVersion, req.ID, req)
}

// CreateTableTag runs CreateTableTag: tag a version of the table
// (create-only, in Lance's format).
func (c *Client) CreateTableTag(ctx context.Context, req api.CreateTableTagRequest) (*api.TableTagResponse, error) {
	return call[api.TableTagResponse](ctx, c, api.OpCreateTableTag, req.ID, req)
}

// UpdateTableTag runs UpdateTableTag: point an existing tag to another
// version.
func (c *Client) UpdateTableTag(ctx context.Context, req api.CreateTableTagRequest) (*api.TableTagResponse, error) {
	return call[api.TableTagResponse](ctx, c, api.OpUpdateTableTag, req.ID, req)
}

// DeleteTableTag runs DeleteTableTag: delete a tag.
func (c *Client) DeleteTableTag(ctx context.Context, req api.DeleteTableTagRequest) (*api.TableTagResponse, error) {
	return call[api.TableTagResponse](ctx, c, api.OpDeleteTableTag, req.ID, req)
}

// ListTableBranches runs ListTableBranches: list the branches Lance
// recorded for a table (its _refs/branches/), paged.
func (c *Client) ListTableBranches(ctx context.Context, req api.ListTableBranchesRequest) (*api.ListTableBranchesResponse, error) {
	return call[api.ListTableBranchesResponse](ctx, c, api.OpListTableBranches, req.ID, req)
}

// CreateTableBranch runs CreateTableBranch: create a branch from a version
// of main or of another branch, as Lance does (a shallow clone committed as
// the branch's first version, and its _refs/branches/ file).
func (c *Client) CreateTableBranch(ctx context.Context, req api.CreateTableBranchRequest) (*api.CreateTableBranchResponse, error) {
	return call[api.CreateTableBranchResponse](ctx, c, api.OpCreateTableBranch, req.ID, req)
}

// DeleteTableBranch runs DeleteTableBranch: delete a branch no branch forks
// from and no tag points into: its _refs/branches/ file and its tree/, as
// Lance does.
func (c *Client) DeleteTableBranch(ctx context.Context, req api.DeleteTableBranchRequest) (*api.DeleteTableBranchResponse, error) {
	return call[api.DeleteTableBranchResponse](ctx, c, api.OpDeleteTableBranch, req.ID, req)
}

// RestoreTable runs RestoreTable: make a version of a table (or of a
// branch) its newest, as Lance's restore does: the version's content
// committed as the next version.
func (c *Client) RestoreTable(ctx context.Context, req api.RestoreTableRequest) (*api.RestoreTableResponse, error) {
	return call[api.RestoreTableResponse](ctx, c, api.OpRestoreTable, req.ID, req)
}

// GetTableStats runs GetTableStats: a table's statistics (rows, fragments,
// indices, bytes), read from its latest manifest.
func (c *Client) GetTableStats(ctx context.Context, req api.GetTableStatsRequest) (*api.GetTableStatsResponse, error) {
	return call[api.GetTableStatsResponse](ctx, c, api.OpGetTableStats, req.ID, req)
}

// BatchCreateTableVersions runs BatchCreateTableVersions: commit versions
// of several tables atomically: all or none.
func (c *Client) BatchCreateTableVersions(ctx context.Context, req api.BatchCreateTableVersionsRequest) (*api.BatchCreateTableVersionsResponse, error) {
	return call[api.BatchCreateTableVersionsResponse](ctx, c, api.OpBatchCreateTableVersions, nil, req)
}

// BatchCommitTables runs BatchCommitTables: commit table versions,
// declarations and drops across tables atomically: all or none.
func (c *Client) BatchCommitTables(ctx context.Context, req api.BatchCommitTablesRequest) (*api.BatchCommitTablesResponse, error) {
	return call[api.BatchCommitTablesResponse](ctx, c, api.OpBatchCommitTables, nil, req)
}

// CleanupTable runs CleanupTable: clean up a table's old versions under its
// retention, or the one given: their records, manifests and the files no
// kept version references (flightns; dry_run reports only).
func (c *Client) CleanupTable(ctx context.Context, req api.CleanupTableRequest) (*api.CleanupTableResponse, error) {
	return call[api.CleanupTableResponse](ctx, c, api.OpCleanupTable, req.ID, req)
}

// CreateNamespaceGrant runs CreateNamespaceGrant: give a principal or a
// group a role on the namespace and all it holds (flightns).
func (c *Client) CreateNamespaceGrant(ctx context.Context, req api.NamespaceGrantRequest) error {
	return c.Call(ctx, api.OpCreateNamespaceGrant, req.ID, req, nil)
}

// DeleteNamespaceGrant runs DeleteNamespaceGrant: take away what a
// principal or a group holds on the namespace (flightns).
func (c *Client) DeleteNamespaceGrant(ctx context.Context, req api.NamespaceGrantRequest) error {
	return c.Call(ctx, api.OpDeleteNamespaceGrant, req.ID, req, nil)
}

// ListNamespaceGrants runs ListNamespaceGrants: list the grants on the
// namespace and inside it (flightns).
func (c *Client) ListNamespaceGrants(ctx context.Context, req api.ListNamespaceGrantsRequest) (*api.ListNamespaceGrantsResponse, error) {
	return call[api.ListNamespaceGrantsResponse](ctx, c, api.OpListNamespaceGrants, req.ID, req)
}

// ClaimCompaction runs ClaimCompaction: the next compaction job due among
// the tables the caller may write, leased to req.Worker; Job is nil when
// none is due.
func (c *Client) ClaimCompaction(ctx context.Context, req api.ClaimCompactionRequest) (*api.ClaimCompactionResponse, error) {
	return call[api.ClaimCompactionResponse](ctx, c, api.OpClaimCompaction, nil, req)
}

// HeartbeatCompaction runs HeartbeatCompaction: renew the lease of a
// compaction job the worker holds.
func (c *Client) HeartbeatCompaction(ctx context.Context, req api.HeartbeatCompactionRequest) (*api.HeartbeatCompactionResponse, error) {
	return call[api.HeartbeatCompactionResponse](ctx, c, api.OpHeartbeatCompaction, nil, req)
}

// CompleteCompaction runs CompleteCompaction: report a compaction job the
// worker holds done.
func (c *Client) CompleteCompaction(ctx context.Context, req api.CompleteCompactionRequest) (*api.CompactionJob, error) {
	return call[api.CompactionJob](ctx, c, api.OpCompleteCompaction, nil, req)
}

// FailCompaction runs FailCompaction: report a compaction job the worker
// holds failed.
func (c *Client) FailCompaction(ctx context.Context, req api.FailCompactionRequest) (*api.CompactionJob, error) {
	return call[api.CompactionJob](ctx, c, api.OpFailCompaction, nil, req)
}

// ListCompactions runs ListCompactions: the compaction jobs in progress of
// the tables the caller may read.
func (c *Client) ListCompactions(ctx context.Context, req api.ListCompactionsRequest) (*api.ListCompactionsResponse, error) {
	return call[api.ListCompactionsResponse](ctx, c, api.OpListCompactions, nil, req)
}
