package restserver

import (
	"context"

	"github.com/flightns/flightns/namespace"
)

// Each function below is one route: decode the body and the query into the
// service's request, bind the path id, call the service, return its reply.
// Nothing else happens here; the service decides.

func createNamespace(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.CreateNamespaceRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.CreateNamespace(ctx, req)
}

func listNamespaces(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.ListNamespacesRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	if err := c.paging(&req.PageToken, &req.Limit); err != nil {
		return nil, err
	}
	return s.ListNamespaces(ctx, req)
}

func describeNamespace(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.DescribeNamespaceRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.DescribeNamespace(ctx, req)
}

func dropNamespace(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.DropNamespaceRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	c.str("mode", &req.Mode)
	c.str("behavior", &req.Behavior)
	return s.DropNamespace(ctx, req)
}

func namespaceExists(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.NamespaceExistsRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return nil, s.NamespaceExists(ctx, req)
}

func listTables(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.ListTablesRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	if err := c.listTablesQuery(&req); err != nil {
		return nil, err
	}
	return s.ListTables(ctx, req)
}

func (c *call) listTablesQuery(req *namespace.ListTablesRequest) error {
	if err := c.paging(&req.PageToken, &req.Limit); err != nil {
		return err
	}
	return c.boolean("include_declared", &req.IncludeDeclared)
}

// listAllTables has no path id; a body id is meaningless and ignored.
func listAllTables(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.ListTablesRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	req.ID = nil
	if err := c.listTablesQuery(&req); err != nil {
		return nil, err
	}
	return s.ListAllTables(ctx, req)
}

func registerTable(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.RegisterTableRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.RegisterTable(ctx, req)
}

func describeTable(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.DescribeTableRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		dst  **bool
	}{{"with_table_uri", &req.WithTableURI}, {"load_detailed_metadata", &req.LoadDetailedMetadata}, {"check_declared", &req.CheckDeclared}} {
		if err := c.boolean(f.name, f.dst); err != nil {
			return nil, err
		}
	}
	return s.DescribeTable(ctx, req)
}

func tableExists(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.TableExistsRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return nil, s.TableExists(ctx, req)
}

func dropTable(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.DropTableRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.DropTable(ctx, req)
}

func deregisterTable(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.DeregisterTableRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.DeregisterTable(ctx, req)
}

// declareTable serves DeclareTable and the deprecated CreateEmptyTable,
// whose request is the same and whose reply is a subset.
func declareTable(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.DeclareTableRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.DeclareTable(ctx, req)
}

func renameTable(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.RenameTableRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.RenameTable(ctx, req)
}

func listTableVersions(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.ListTableVersionsRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	if err := c.paging(&req.PageToken, &req.Limit); err != nil {
		return nil, err
	}
	c.str("branch", &req.Branch)
	if err := c.boolean("descending", &req.Descending); err != nil {
		return nil, err
	}
	return s.ListTableVersions(ctx, req)
}

func createTableVersion(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.CreateTableVersionRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.CreateTableVersion(ctx, req)
}

func describeTableVersion(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.DescribeTableVersionRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.DescribeTableVersion(ctx, req)
}

func batchDeleteTableVersions(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.BatchDeleteTableVersionsRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	c.str("branch", &req.Branch)
	return s.BatchDeleteTableVersions(ctx, req)
}

func listTableTags(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.ListTableTagsRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	if err := c.paging(&req.PageToken, &req.Limit); err != nil {
		return nil, err
	}
	return s.ListTableTags(ctx, req)
}

func listTableBranches(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.ListTableBranchesRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	if err := c.paging(&req.PageToken, &req.Limit); err != nil {
		return nil, err
	}
	return s.ListTableBranches(ctx, req)
}

func getTableTagVersion(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.GetTableTagVersionRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.GetTableTagVersion(ctx, req)
}

func createTableTag(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.CreateTableTagRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.CreateTableTag(ctx, req)
}

func updateTableTag(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.CreateTableTagRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.UpdateTableTag(ctx, req)
}

func deleteTableTag(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.DeleteTableTagRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.DeleteTableTag(ctx, req)
}

// The two multi-table routes carry their ids in the body only.

func batchCreateTableVersions(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.BatchCreateTableVersionsRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	return s.BatchCreateTableVersions(ctx, req)
}

func batchCommitTables(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.BatchCommitTablesRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	return s.BatchCommitTables(ctx, req)
}

// request decodes the body into req and binds the path id into its id
// field.
func (c *call) request(req any, id *namespace.ID) error {
	if err := c.decode(req); err != nil {
		return err
	}
	return c.bindID(id)
}

func getTableStats(ctx context.Context, s *namespace.Service, c *call) (any, error) {
	var req namespace.GetTableStatsRequest
	if err := c.request(&req, &req.ID); err != nil {
		return nil, err
	}
	return s.GetTableStats(ctx, req)
}
