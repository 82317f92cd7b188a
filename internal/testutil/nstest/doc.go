// Package nstest gives the tests of the surfaces over the namespace service
// (flightserver, restserver) what that service runs on: a real
// redis-server of the test's own, a file:// root in a temporary directory
// and a catalog name no other test uses.
//
// It must not be imported outside tests.
package nstest
