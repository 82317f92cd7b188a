-- create_object.lua: create (or re-create) a namespace or a table.
--
-- KEYS[1]  {C}:epoch          presence means Redis holds the catalog's state
-- KEYS[2]  {C}:obj            hash: object id -> "namespace" | "table"
-- KEYS[3]  {C}:loc            hash: table id -> location
-- KEYS[4]  {C}:byloc          hash: location -> table id
-- KEYS[5]  {C}:kids:<parent>  set: ids of the parent's children
-- KEYS[6]  {C}:kids:<id>      set: ids of this object's children
-- KEYS[7]  {C}:seq            catalog sequence
-- KEYS[8]  {C}:log            commit log
-- ARGV[1]  id   ARGV[2] parent id ("" is the root)   ARGV[3] type
-- ARGV[4]  mode: "create" | "existok" | "overwrite"
-- ARGV[5]  location (tables; "" for namespaces)
-- ARGV[6]  the row to put, JSON   ARGV[7] approximate MAXLEN of the log
--
-- Guarantee: the parent namespace exists, the id is free (or, with
-- existok, left as it is; with overwrite, replaced — a namespace only when
-- empty), a table's location belongs to no other table; then the object is
-- indexed and its row appended to the log under one new sequence. Nothing
-- is written when a check fails. Replies: {"NOEPOCH"} | {"NOPARENT"} |
-- {"EXISTS", type} | {"EXISTING"} | {"NOTEMPTY"} | {"LOCTAKEN", id} |
-- {"OK", seq}
if not catalog_epoch(KEYS[1]) then return NOEPOCH end
local id, parent, typ, mode, loc = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if parent ~= '' and redis.call('HGET', KEYS[2], parent) ~= 'namespace' then return {'NOPARENT'} end
local existing = redis.call('HGET', KEYS[2], id)
local oldloc = false
if existing then
  if existing ~= typ or mode == 'create' then return {'EXISTS', existing} end
  if mode == 'existok' then return {'EXISTING'} end
  if typ == 'namespace' and redis.call('SCARD', KEYS[6]) > 0 then return {'NOTEMPTY'} end
  if typ == 'table' then oldloc = redis.call('HGET', KEYS[3], id) end
end
if typ == 'table' then
  local owner = redis.call('HGET', KEYS[4], loc)
  if owner and owner ~= id then return {'LOCTAKEN', owner} end
end
if oldloc and oldloc ~= loc then redis.call('HDEL', KEYS[4], oldloc) end
redis.call('HSET', KEYS[2], id, typ)
if typ == 'table' then
  redis.call('HSET', KEYS[3], id, loc)
  redis.call('HSET', KEYS[4], loc, id)
end
redis.call('SADD', KEYS[5], id)
local seq = next_seq(KEYS[7])
append_log(KEYS[8], ARGV[7], seq, 0, 'k', 'put', 'row', ARGV[6])
return {'OK', seq}
