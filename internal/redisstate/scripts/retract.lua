-- retract.lua: take back an unproven claim (claim.lua's "unproven") whose
-- staging object was not found, in two steps with a wait between them
-- (redisclaim's retract).
--
-- KEYS[1]  {C}:v:<table>    version records
-- KEYS[2]  {C}:z:<table>    version index
-- KEYS[3]  {C}:heads
-- ARGV[1]  "mark" | "remove"
-- ARGV[2]  table
-- ARGV[3]  version
-- ARGV[4]  the staging path the version was claimed with
-- ARGV[5]  mark: the time, microseconds since the epoch
--
-- mark: an unproven staged record with that staging path gets the time
-- the taking back began (rt), unless it has one: from then on nothing
-- may promote it. Replies {"OK", rt}; {"FINAL"} when the version is
-- final (or deleted: it was final first), so it committed; {"PROVEN"}
-- for a claim that is not unproven (it cannot be taken back); {"GONE"}
-- when no record holds that staging path.
-- remove: a marked record with that staging path becomes a tombstone of
-- the claim taken back (st "retracted": the materializer makes no row of
-- its log entry; a claim of the version treats it as absent), leaves the
-- version index, and the head is lowered below it if it is the head
-- (claim.lua makes no claim above an unproven one). Replies 1 when
-- removed, 0 otherwise.
local raw = redis.call('HGET', KEYS[1], ARGV[3])
if ARGV[1] == 'mark' then
  if not raw then return {'GONE'} end
  local r = cjson.decode(raw)
  if r.st == 'final' or r.st == 'deleted' then
    if r.st == 'deleted' or r.sp == ARGV[4] then return {'FINAL'} end
    return {'GONE'}
  end
  if r.sp ~= ARGV[4] or r.st ~= 'staged' then return {'GONE'} end
  if r.pf ~= '1' then return {'PROVEN'} end
  if not r.rt then
    r.rt = ARGV[5]
    redis.call('HSET', KEYS[1], ARGV[3], cjson.encode(r))
  end
  return {'OK', r.rt}
end
if ARGV[1] ~= 'remove' then return redis.error_reply('retract.lua: unknown step ' .. tostring(ARGV[1])) end
if not raw then return 0 end
local r = cjson.decode(raw)
if r.st ~= 'staged' or r.sp ~= ARGV[4] or not r.rt then return 0 end
redis.call('HSET', KEYS[1], ARGV[3], cjson.encode({st = 'retracted', sp = r.sp, fp = r.fp, sz = '', et = '', tx = '', ts = r.ts, seq = r.seq}))
redis.call('ZREM', KEYS[2], ARGV[3])
if redis.call('HGET', KEYS[3], ARGV[2]) == ARGV[3] then
  redis.call('HSET', KEYS[3], ARGV[2], string.format('%d', tonumber(ARGV[3]) - 1))
end
return 1
