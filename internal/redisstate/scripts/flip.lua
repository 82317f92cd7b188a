-- flip.lua: mark a claimed version final, compare-and-set from the exact
-- staging path it was claimed with.
--
-- KEYS[1]  {C}:v:<table>    version records
-- ARGV[1]  version
-- ARGV[2]  the staging path the version was claimed with
-- ARGV[3]  the final path
-- ARGV[4]  the final object's size (for an unproven claim, read from the
--          final object: the claim's size was the writer's word)
--
-- Guarantee: only a record still claimed with that staging path changes,
-- and only from staged to final; a record already final stays as it is.
-- Replies 1 when the record is (now) final or a tombstone (a deletion
-- finishes a staged version before it deletes it, so a tombstone was
-- final), 0 when it is missing or was claimed with another staging path.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local r = cjson.decode(raw)
if r.st == 'deleted' then return 1 end
if r.sp ~= ARGV[2] or r.fp ~= ARGV[3] then return 0 end
if r.st == 'final' then return 1 end
r.st = 'final'
r.sz = ARGV[4]
r.pf, r.rt = nil, nil -- proven: the final object exists (its size read from it)
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
return 1
