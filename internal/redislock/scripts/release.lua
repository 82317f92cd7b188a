-- release.lua: delete a lock if its holder's token still holds it.
--
-- KEYS[1]  the lock's key (its value is the holder's token)
-- ARGV[1]  the caller's token
--
-- Guarantee: a caller whose lock has lapsed and been taken by another
-- never deletes its successor's. Replies 1 when it deleted the key, else
-- 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
