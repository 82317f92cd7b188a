// Package privateredis runs a data directory's private Redis: the
// redis-server child that `flightns serve` starts when no --redis URL is
// given, and that the admin commands share while a server runs.
//
// The protocol, on the files of the data directory <data>:
//
//   - <data>/flightns.lock is the directory's lock. One process at a time
//     holds it (flock, exclusive, never waited for), and only the holder
//     runs the private Redis. The kernel releases a flock with its open
//     file description, so a holder that dies, even by SIGKILL, leaves no
//     stale lock behind, and no pid file needs checking.
//   - <data>/redis holds the server's append-only file (fsynced before
//     every reply) and its log. The server listens on a Unix socket only,
//     <data>/redis/redis.sock, or, when that path does not fit in a socket
//     address, redis.sock in a fresh directory under the system's temporary
//     directory: no TCP port to collide with the server's listeners.
//   - <data>/redis/redis.url is the server's URL, published by the holder
//     once the server answers, and removed before it stops. A process that
//     finds the lock held may use that URL (share: the admin commands next
//     to a running server) or must refuse (a second server).
//
// Close undoes Open in the reverse order of publication: the URL file
// goes first, so that no newcomer is sent to a server that is stopping;
// the lock goes last, so that no newcomer starts a second server on the
// same append-only file while the first still writes it.
//
// Its error messages are the operator's: they name flightns's --data and
// --redis flags, the ways out of a held lock or a missing redis-server.
//
// It must not: touch a Redis it did not start (one given by URL, or one it
// shares), read or write any key, or wait for a held lock.
package privateredis
