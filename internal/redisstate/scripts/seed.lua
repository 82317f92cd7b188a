-- seed.lua: record versions found in object storage, and raise the head.
--
-- KEYS[1]  {C}:epoch
-- KEYS[2]  {C}:recovering   the recovery lock
-- KEYS[3]  {C}:heads
-- KEYS[4]  {C}:v:<table>    version records
-- KEYS[5]  {C}:z:<table>    version index
-- ARGV[1]  table
-- ARGV[2]  head: the highest version in storage (0 for none)
-- ARGV[3]  the recovery lock token when called by a recovery, else ""
-- ARGV[4..] quintuples: version, final path, size, staging path, txn id
--           (the last two "" unless a recovery rolled a transaction forward)
--
-- Guarantee: heads only move up; an existing record is never replaced
-- (storage only adds what Redis does not know), but for the tombstone of
-- a claim taken back (retract.lua), which holds nothing. Runs while the epoch is
-- present, or during a recovery by the holder of its lock. Replies
-- {"NOEPOCH"} or {"OK", head} with the head after seeding.
if not catalog_epoch(KEYS[1]) and (ARGV[3] == '' or redis.call('GET', KEYS[2]) ~= ARGV[3]) then
  return NOEPOCH
end
for i = 4, #ARGV, 5 do
  local ver = ARGV[i]
  local rec = cjson.encode({st = 'final', sp = ARGV[i + 3], fp = ARGV[i + 1], sz = ARGV[i + 2], et = '',
    tx = ARGV[i + 4], ts = '', seq = ''})
  local old = redis.call('HGET', KEYS[4], ver)
  if not old or cjson.decode(old).st == 'retracted' then
    redis.call('HSET', KEYS[4], ver, rec)
    redis.call('ZADD', KEYS[5], tonumber(ver), ver)
  end
end
local head = redis.call('HGET', KEYS[3], ARGV[1])
if not head or tonumber(head) < tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
  head = ARGV[2]
end
return {'OK', head}
