-- open_epoch.lua: end a recovery: raise the catalog sequence to at least a
-- floor and set a new epoch, after which claims are accepted again.
--
-- KEYS[1]  {C}:epoch
-- KEYS[2]  {C}:seq
-- KEYS[3]  {C}:log
-- KEYS[4]  {C}:recovering   the recovery lock
-- ARGV[1]  the new epoch
-- ARGV[2]  sequence floor
-- ARGV[3]  the lock token of the recovery that finishes
-- ARGV[4]  "1" to open the epoch; "0" only raises the sequence (at the
--          start of a recovery, so that what it appends gets sequences
--          above everything durable)
--
-- Guarantee: the sequence only moves up, and never below the commit log's
-- last entry; only the holder of the recovery lock opens the epoch.
-- Replies {"OK", epoch} or {"LOST"} when the lock is not held.
if redis.call('GET', KEYS[4]) ~= ARGV[3] then return {'LOST'} end
local floor = tonumber(ARGV[2])
local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
if #last > 0 then
  local top = tonumber(string.match(last[1][1], '^(%d+)'))
  if top > floor then floor = top end
end
if cur < floor then redis.call('SET', KEYS[2], string.format('%d', floor)) end
if ARGV[4] ~= '1' then return {'OK', ''} end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[4])
return {'OK', ARGV[1]}
