-- release_loc.lua: end the reservation of a table directory no live
-- table has (its drop's deletion done, its drop purged, its tombstone
-- collected).
--
-- KEYS[1]  {C}:epoch   KEYS[2] {C}:byloc   KEYS[3] {C}:locs
-- ARGV[1]  the location
--
-- Guarantee: a location a live table has (a field of byloc) stays
-- reserved. Replies {"NOEPOCH"}, {"TAKEN"} (a live table has it) or
-- {"OK"} (not reserved now, whether it was or not).
if not catalog_epoch(KEYS[1]) then return NOEPOCH end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return {'TAKEN'} end
redis.call('ZREM', KEYS[3], ARGV[1])
return {'OK'}
