-- rename_table.lua: give a table a new id (name and/or namespace); its
-- location stays.
--
-- KEYS[1]  {C}:epoch   KEYS[2] {C}:obj   KEYS[3] {C}:loc   KEYS[4] {C}:byloc
-- KEYS[5]  {C}:kids:<old parent>   KEYS[6] {C}:kids:<new parent>
-- KEYS[7]  {C}:seq     KEYS[8] {C}:log
-- ARGV[1]  old id   ARGV[2] new id   ARGV[3] new parent id ("" root)
-- ARGV[4]  the table's row under its new id, JSON   ARGV[5] MAXLEN
--
-- Guarantee: the old id is a table, the new parent a namespace, the new id
-- free; then the index moves and the log gets the rename (version rows
-- follow), the old row's delete and the new row, under one sequence.
-- Replies: {"NOEPOCH"} | {"NOTFOUND"} | {"NOPARENT"} | {"EXISTS", type} |
-- {"OK", seq}
if not catalog_epoch(KEYS[1]) then return NOEPOCH end
local old, new, parent = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HGET', KEYS[2], old) ~= 'table' then return {'NOTFOUND'} end
if parent ~= '' and redis.call('HGET', KEYS[2], parent) ~= 'namespace' then return {'NOPARENT'} end
local taken = redis.call('HGET', KEYS[2], new)
if taken then return {'EXISTS', taken} end
local loc = redis.call('HGET', KEYS[3], old)
redis.call('HDEL', KEYS[2], old)
redis.call('HSET', KEYS[2], new, 'table')
redis.call('HDEL', KEYS[3], old)
if loc then
  redis.call('HSET', KEYS[3], new, loc)
  redis.call('HSET', KEYS[4], loc, new)
end
redis.call('SREM', KEYS[5], old)
redis.call('SADD', KEYS[6], new)
local seq = next_seq(KEYS[7])
append_log(KEYS[8], ARGV[5], seq, 0, 'k', 'rename_table', 'from', old, 'to', new)
append_log(KEYS[8], ARGV[5], seq, 1, 'k', 'delete', 'key',
  cjson.encode({object_type = 'table', object_id = old}))
append_log(KEYS[8], ARGV[5], seq, 2, 'k', 'put', 'row', ARGV[4])
return {'OK', seq}
