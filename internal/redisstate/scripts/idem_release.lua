-- idem_release.lua: a request under an idempotency key ended with an
-- outcome a retry must not get again: its reservation is dropped, so the
-- retry runs (package idempotency).
--
-- KEYS[1]  {C}:idem:<hash>   the key's record (JSON: "o" the owner of a
--                            reservation)
-- ARGV[1]  the reservation's owner
--
-- Guarantee: only the owner's own reservation is dropped. Replies 1 when
-- it was, else nil.
local v = redis.call('GET', KEYS[1])
if not v then return false end
local ok, r = pcall(cjson.decode, v)
if not ok or r['o'] ~= ARGV[1] then return false end
redis.call('DEL', KEYS[1])
return 1
