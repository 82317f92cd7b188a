-- supersede.lua: a claimed version turned out to exist in storage already
-- with other bytes (Redis had lost that commit). Replace the claim with
-- what storage holds.
--
-- KEYS[1]  {C}:v:<table>    version records
-- ARGV[1]  version
-- ARGV[2]  the staging path of the claim being superseded
-- ARGV[3]  the final path
-- ARGV[4]  the size of the object storage holds
--
-- Guarantee: only a staged record with that staging path is replaced.
-- Replies 1 when replaced, 0 otherwise.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local r = cjson.decode(raw)
if r.sp ~= ARGV[2] or r.st ~= 'staged' then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode({st = 'final', sp = '', fp = ARGV[3], sz = ARGV[4],
  et = '', tx = '', ts = r.ts, seq = r.seq}))
return 1
