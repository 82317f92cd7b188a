-- delete_versions.lua: forget the records of versions in ranges.
--
-- KEYS[1]  {C}:epoch
-- KEYS[2]  {C}:seq
-- KEYS[3]  {C}:log
-- KEYS[4]  {C}:v:<table>    version records
-- KEYS[5]  {C}:z:<table>    version index
-- ARGV[1]  table
-- ARGV[2]  approximate MAXLEN of the commit log
-- ARGV[3]  "probe": list the staged versions in the ranges, change nothing;
--          "settle": as "probe" when there are any, else as "delete";
--          "delete": delete the versions that are not staged
-- ARGV[4..] pairs: start (inclusive), end (exclusive; "+inf" for no end)
--
-- Guarantee: staged records are kept (the caller settled or probed first
-- and finished those it found, so a staged record at "delete" is a commit
-- that began after the deletion did); the head never moves; a deleted version's record
-- becomes a tombstone {"st":"deleted"} (out of the index), so that it is
-- not read back from storage and recorded again. One log entry records the
-- deletion. Replies {"NOEPOCH"}, {"STAGED", version...} (probe, settle), or
-- {"OK", deleted count, seq}.
if not catalog_epoch(KEYS[1]) then return NOEPOCH end
local mode = ARGV[3]
local victims, staged = {}, {'STAGED'}
for i = 4, #ARGV, 2 do
  local hi = ARGV[i + 1]
  if hi ~= '+inf' then hi = '(' .. hi end
  local vers = redis.call('ZRANGE', KEYS[5], ARGV[i], hi, 'BYSCORE')
  for _, ver in ipairs(vers) do
    local raw = redis.call('HGET', KEYS[4], ver)
    if raw and cjson.decode(raw).st == 'staged' then
      staged[#staged + 1] = ver
    else
      victims[#victims + 1] = ver
    end
  end
end
if mode == 'probe' or (mode == 'settle' and #staged > 1) then return staged end
if #victims == 0 then return {'OK', 0, ''} end
for _, ver in ipairs(victims) do
  redis.call('HSET', KEYS[4], ver, '{"st":"deleted"}')
  redis.call('ZREM', KEYS[5], ver)
end
local seq = next_seq(KEYS[2])
append_log(KEYS[3], ARGV[2], seq, 0, 'k', 'delete_versions', 't', ARGV[1], 'vs', table.concat(victims, ','))
return {'OK', #victims, seq}
