// Package redislock releases and renews a lock held in one Redis key whose
// value is its holder's token.
//
// Checking the token and then deleting (or extending) the key in two
// commands races with expiry: between the GET and the DEL the lock may
// lapse and be taken by another process, whose lock the DEL then removes.
// Release and Renew compare and act in one script, so a holder whose lock
// has lapsed can never touch its successor's.
package redislock
