-- clear_kids.lua: during a recovery, delete children sets.
--
-- KEYS[1]  {C}:recovering   the recovery lock
-- KEYS[2..] {C}:kids:<id> sets to delete
-- ARGV[1]  the recovery's lock token
--
-- Guarantee: only the holder of the recovery lock deletes. Replies 1, or
-- 0 when the lock is not held.
if catalog_epoch(KEYS[1]) ~= ARGV[1] then return 0 end
for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
