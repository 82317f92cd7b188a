-- drop_objects.lua: drop a namespace or table, or a namespace and all it
-- holds (cascade).
--
-- KEYS[1]  {C}:epoch   KEYS[2] {C}:obj   KEYS[3] {C}:loc   KEYS[4] {C}:byloc
-- KEYS[5]  {C}:seq     KEYS[6] {C}:log   KEYS[7] {C}:kids:<parent of the top object>
-- KEYS[8..] {C}:kids:<id> of every namespace listed, in listing order
-- ARGV[1]  approximate MAXLEN of the log
-- ARGV[2]  restrict: "1" refuses a namespace that holds anything
-- ARGV[3..] pairs: id, type — the top object first, then everything inside
--           it (cascade)
--
-- Guarantee: every listed object exists with its type, and every child of
-- a listed namespace is listed too (so nothing is orphaned); then all are
-- forgotten together, each table's version rows and claims with it, under
-- one sequence. Replies: {"NOEPOCH"} | {"NOTFOUND", id} |
-- {"NOTEMPTY"} | {"CHANGED"} | {"OK", seq, location_1, ...} (one
-- location per table dropped).
if not catalog_epoch(KEYS[1]) then return NOEPOCH end
local listed = {}
for a = 3, #ARGV, 2 do listed[ARGV[a]] = ARGV[a + 1] end
local k = 8
for a = 3, #ARGV, 2 do
  local id, typ = ARGV[a], ARGV[a + 1]
  if redis.call('HGET', KEYS[2], id) ~= typ then return {'NOTFOUND', id} end
  if typ == 'namespace' then
    local kids = redis.call('SMEMBERS', KEYS[k])
    if ARGV[2] == '1' and #kids > 0 then return {'NOTEMPTY'} end
    for _, kid in ipairs(kids) do
      if not listed[kid] then return {'CHANGED'} end
    end
    k = k + 1
  end
end
local seq = next_seq(KEYS[5])
local out = {'OK', seq}
local i = 0
k = 8
for a = 3, #ARGV, 2 do
  local id, typ = ARGV[a], ARGV[a + 1]
  if typ == 'table' then
    local loc = redis.call('HGET', KEYS[3], id)
    if loc then
      redis.call('HDEL', KEYS[4], loc)
      append_log(KEYS[6], ARGV[1], seq, i, 'k', 'drop_table', 't', loc)
      i = i + 1
      out[#out + 1] = loc
    end
    redis.call('HDEL', KEYS[3], id)
  else
    redis.call('DEL', KEYS[k])
    k = k + 1
  end
  redis.call('HDEL', KEYS[2], id)
  append_log(KEYS[6], ARGV[1], seq, i, 'k', 'delete', 'key',
    cjson.encode({object_type = typ, object_id = id}))
  i = i + 1
end
redis.call('SREM', KEYS[7], ARGV[3])
return out
