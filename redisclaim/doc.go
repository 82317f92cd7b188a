// Package redisclaim decides which staged manifest becomes version N of a
// table: Lance's ExternalManifestStore protocol with Redis in DynamoDB's
// place, plus atomic claims across many tables (DESIGN §4.1, §4.2).
//
// Not yet implemented; see issue "redisclaim".
package redisclaim
