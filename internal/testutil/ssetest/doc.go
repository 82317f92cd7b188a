// Package ssetest reads Server-Sent Events streams for tests: the change
// feed's (GET /v1/changes), directly or through the console. It is test
// machinery; no production package imports it.
package ssetest
