// Package flighttest runs SQL over Flight SQL for tests: a one-column
// query's values as strings, without credentials. It is test machinery;
// no production package imports it.
package flighttest
