package api_test

import (
	"fmt"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// A request body is decoded as every surface of the server decodes it:
// one JSON object, unknown fields ignored; anything else is InvalidInput.
func ExampleDecodeRequest() {
	var req api.CreateTableVersionRequest
	body := `{"id": ["sales", "orders"], "version": 7, "manifest_path": "orders/_versions/7.manifest", "newer_field": true}`
	if err := api.DecodeRequest([]byte(body), &req); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(req.ID, req.Version, req.ManifestPath)

	err := api.DecodeRequest([]byte(`["sales", "orders"]`), &req)
	fmt.Println(nserror.CodeOf(err))
	// Output:
	// sales$orders 7 orders/_versions/7.manifest
	// InvalidInput
}

// An id's string form is the REST path's: its names joined by Delimiter.
func ExampleParseID() {
	id, err := api.ParseID("sales$orders", api.Delimiter)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(id), id.Parent(), id.Name())

	_, err = api.ParseID("sales$$orders", api.Delimiter)
	fmt.Println(nserror.CodeOf(err))
	// Output:
	// 2 sales orders
	// InvalidInput
}
