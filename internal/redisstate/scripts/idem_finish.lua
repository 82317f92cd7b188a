-- idem_finish.lua: a request under an idempotency key ran: its
-- reservation becomes its answer (package idempotency).
--
-- KEYS[1]  {C}:idem:<hash>   the key's record (JSON: "o" the owner of a
--                            reservation, "r" an answer)
-- ARGV[1]  the reservation's owner
-- ARGV[2]  the record of the answer
-- ARGV[3]  how long the answer is kept, milliseconds
--
-- Guarantee: only the owner's own reservation is replaced (one that
-- lapsed and was taken by another request stays that one's). Replies 1
-- when it was, else nil.
local v = redis.call('GET', KEYS[1])
if not v then return false end
local ok, r = pcall(cjson.decode, v)
if not ok or r['o'] ~= ARGV[1] then return false end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
