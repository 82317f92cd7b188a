-- rebuild_index.lua: during a recovery, index objects read from
-- __manifest, and reserve the directories of tables and kept drops.
--
-- KEYS[1]  {C}:recovering   the recovery lock
-- KEYS[2]  {C}:obj   KEYS[3] {C}:loc   KEYS[4] {C}:byloc   KEYS[5] {C}:locs
-- KEYS[6..] {C}:kids:<parent> of each object but the reserved ones, in order
-- ARGV[1]  the recovery's lock token
-- ARGV[2]  "1" to clear obj, loc, byloc and locs first (the first batch)
-- ARGV[3..] triples: id, type, location ("" for namespaces); type
--          "reserved" (id "") reserves a location no live table has
--          (a drop kept for undrop), and names no kids key
--
-- Guarantee: only the holder of the recovery lock writes. Replies 1, or
-- 0 when the lock is not held.
if catalog_epoch(KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '1' then redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5]) end
local k = 6
for a = 3, #ARGV, 3 do
  local id, typ, loc = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  if typ == 'reserved' then
    redis.call('ZADD', KEYS[5], 0, loc)
  else
    redis.call('HSET', KEYS[2], id, typ)
    if typ == 'table' and loc ~= '' then
      redis.call('HSET', KEYS[3], id, loc)
      redis.call('HSET', KEYS[4], loc, id)
      redis.call('ZADD', KEYS[5], 0, loc)
    end
    redis.call('SADD', KEYS[k], id)
    k = k + 1
  end
end
return 1
