-- get.lua: read a table's head and one version record.
--
-- KEYS[1]  {C}:epoch
-- KEYS[2]  {C}:heads
-- KEYS[3]  {C}:v:<table>    version records
-- ARGV[1]  table
-- ARGV[2]  version, or "" for the head
--
-- Read-only. Replies:
--   {"NOEPOCH"} | {"NOHEAD"} | {"OK", epoch, head, record or ""}
local epoch = catalog_epoch(KEYS[1])
if not epoch then return NOEPOCH end
local head = redis.call('HGET', KEYS[2], ARGV[1])
if not head then return {'NOHEAD'} end
local ver = ARGV[2]
if ver == '' then ver = head end
local rec = redis.call('HGET', KEYS[3], ver)
return {'OK', epoch, head, rec or ''}
