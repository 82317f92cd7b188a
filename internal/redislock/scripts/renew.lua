-- renew.lua: extend a lock's lifetime if its holder's token still holds it.
--
-- KEYS[1]  the lock's key (its value is the holder's token)
-- ARGV[1]  the caller's token
-- ARGV[2]  the new lifetime, milliseconds
--
-- Guarantee: a caller whose lock has lapsed and been taken by another
-- never extends its successor's. Replies 1 when it extended the key, else
-- 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
