package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/client"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/server"
)

// A server in a temporary directory (its private redis-server needs
// redis-server on the PATH), and a client that makes a namespace and a
// table in it and lists them. A missing table is an *nserror.Error with
// the Lance Namespace code the server sent.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "flightns-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	srv, err := server.Start(ctx, server.Config{
		Store:    server.Store{DataDir: dir},
		RESTAddr: "127.0.0.1:0",
		SQL:      server.SQL{Isolation: "none", Memory: "256MB"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = srv.Close() }()

	c, err := client.New(client.Config{URL: "http://" + srv.RESTAddr().String()})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"sales"}}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"sales", "orders"}}); err != nil {
		fmt.Println(err)
		return
	}
	list, err := c.ListTables(ctx, api.ListTablesRequest{ID: api.ID{"sales"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(list.Tables)

	_, err = c.DescribeTable(ctx, api.DescribeTableRequest{ID: api.ID{"sales", "returns"}})
	fmt.Println(errors.Is(err, nserror.ErrTableNotFound), nserror.CodeOf(err))
	// Output:
	// [orders]
	// true TableNotFound
}

// The client's configuration: a server's REST URL and a bearer token
// (or a user and password); New checks it and connects on the first
// call.
func ExampleNew() {
	_, err := client.New(client.Config{URL: "localhost:31338"})
	fmt.Println(err)
	c, err := client.New(client.Config{URL: "https://flightns.example.com:31338", Token: "secret"})
	fmt.Println(c != nil, err)
	// Output:
	// client: URL "localhost:31338": want http://host:port or https://host:port
	// true <nil>
}
