-- lease.lua: take or renew a lease (the materializer's, the maintainer's, a
-- table cleanup's lock).
--
-- KEYS[1]  {C}:mlease, {C}:maintlease or {C}:cleanup:<location>
-- ARGV[1]  this holder's token
-- ARGV[2]  lease time, milliseconds
--
-- Guarantee: one holder at a time; the holder renews, others wait until it
-- lapses. Replies 1 when the caller holds the lease, else 0.
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1
