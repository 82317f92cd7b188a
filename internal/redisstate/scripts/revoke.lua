-- revoke.lua: end a principal's sessions issued up to a time, on every
-- replica (each reads it at most a few seconds late: auth.Revocations).
--
-- KEYS[1]  {C}:revoked   hash: principal -> unix milliseconds
-- ARGV[1]  principal
-- ARGV[2]  the time, unix milliseconds
--
-- Guarantee: a principal's time only moves up (a revocation is never
-- undone by one with an earlier clock). Replies the time kept.
local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local want = tonumber(ARGV[2])
if want > cur then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  cur = want
end
return string.format('%d', cur)
