-- reserve_locs.lua: reserve the table directories of a catalog whose
-- Redis state predates the reservations ({C}:locs), once.
--
-- KEYS[1]  {C}:epoch   KEYS[2] {C}:byloc   KEYS[3] {C}:locs
-- ARGV[1..] locations no live table has that stay reserved (the
--           directories of drops kept for undrop)
--
-- Guarantee: when locs does not exist yet, every live table's location
-- (byloc's fields, read here, so none is missed) and every ARGV location
-- is added to it; when it exists nothing is written. O(tables) once.
-- Replies {"NOEPOCH"}, {"DONE"} (locs existed) or {"OK", n} (n reserved).
if not catalog_epoch(KEYS[1]) then return NOEPOCH end
if redis.call('EXISTS', KEYS[3]) == 1 then return {'DONE'} end
local n = 0
for _, loc in ipairs(redis.call('HKEYS', KEYS[2])) do
  n = n + redis.call('ZADD', KEYS[3], 0, loc)
end
for _, loc in ipairs(ARGV) do
  n = n + redis.call('ZADD', KEYS[3], 0, loc)
end
return {'OK', n}
