package server_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/flightns/flightns/server"
)

// A whole flightns in a Go program: the catalog in a data directory (its
// root and a private redis-server), the Lance Namespace REST surface on a
// free port; Start returns once the server is ready, Close stops it in
// order. A real deployment sets Store.Root (s3://…), Store.Redis, the
// Flight SQL address and an auth file.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "flightns-example")
	defer func() { _ = os.RemoveAll(dir) }()

	srv, err := server.Start(ctx, server.Config{
		Store:    server.Store{DataDir: dir},
		RESTAddr: "127.0.0.1:0",
		SQL:      server.SQL{Isolation: "none"}, // SQL in this process (the binary runs a worker)
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = srv.Close() }()

	base := "http://" + srv.RESTAddr().String() + "/v1/"
	post := func(path, body string) string {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(resp.Status + " " + string(b))
	}
	fmt.Println(post("namespace/sales/create", `{}`))
	fmt.Println(post("namespace/sales/exists", `{}`))
	fmt.Println(post("namespace/nope/exists", `{}`))
	// Output:
	// 200 OK {"properties":{}}
	// 200 OK
	// 404 Not Found {"error":"namespace \"nope\" does not exist","code":1,"detail":"NamespaceNotFound (code 1) answering POST /v1/namespace/nope/exists","instance":"/v1/namespace/nope/exists"}
}
