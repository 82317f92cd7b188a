// Command rootfs writes the root filesystem of the flightns container
// image as a tar: the server binary, redis-server (the single-container
// default runs a private one), every shared library the two link (as
// ldd lists them, with the dynamic loader), CA certificates, time zones,
// a passwd and group with the non-root user flightns (uid and gid 10001),
// its data directory /data and a world-writable /tmp. Owners, modes and
// times are set in the tar itself, so the image does not depend on the
// build machine's users or clocks, and the same inputs give the same tar.
//
//	go run ./internal/tools/rootfs -flightns bin/flightns -redis /usr/bin/redis-server -o rootfs.tar
//
// deploy/image/Containerfile adds the tar to an empty image; make image
// (scripts/build-image.sh) runs both.
package main
