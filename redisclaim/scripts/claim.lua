-- claim.lua: claim version N of one or more tables, all or none.
--
-- KEYS[1]  {C}:epoch        presence means Redis holds our state
-- KEYS[2]  {C}:heads        hash: table -> head version
-- KEYS[3]  {C}:seq          catalog sequence counter
-- KEYS[4]  {C}:log          commit-log stream, entry ids <seq>-<i>
-- KEYS[5]  {C}:txn:<id>     the transaction's hash (unused without a txn)
-- KEYS[6+2(i-1)], KEYS[7+2(i-1)]   table i's version records (hash) and version index (zset)
-- ARGV[1]  transaction id, "" for a single-table claim
-- ARGV[2]  commit time, microseconds since the epoch
-- ARGV[3]  n, the number of tables
-- ARGV[4]  the transaction record's bytes ("" without a txn)
-- ARGV[5]  approximate MAXLEN of the commit log
-- ARGV[6+6(i-1)] .. ARGV[11+6(i-1)]  table, version, staging path, final path, size, etag
--
-- Guarantee: either every table i gets version_i == head_i + 1 recorded as
-- staged (one catalog sequence for all, one log entry each), or nothing is
-- written. Validation reads everything first; writes follow (Lua has no
-- rollback). Replies:
--   {"NOEPOCH"}                  Redis lost our state: recover first
--   {"NOHEAD", i}                table i has no head yet: seed it from storage
--   {"CONFLICT", i, head}        version_i is taken (by another staging path)
--   {"GAP", i, head}             version_i > head_i + 1
--   {"DUP", epoch, rec_1..rec_n} all already claimed with these staging paths
--                                (by one transaction, for n > 1)
--   {"OK", epoch, seq}
local epoch = redis.call('GET', KEYS[1])
if not epoch then return {'NOEPOCH'} end
local txn, now, n = ARGV[1], ARGV[2], tonumber(ARGV[3])

local dups, recs, owner = 0, {}, nil
for i = 1, n do
  local a = 6 + (i - 1) * 6
  local tbl, ver, staging = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local head = redis.call('HGET', KEYS[2], tbl)
  if not head then return {'NOHEAD', i} end
  local existing = redis.call('HGET', KEYS[6 + (i - 1) * 2], ver)
  if existing then
    -- Taken. By this very staging path (a retry after a lost reply, or a
    -- helper's roll-forward)? Then it is a duplicate, not a conflict.
    local r = cjson.decode(existing)
    if r.sp ~= staging or (owner ~= nil and r.tx ~= owner) or (n > 1 and r.tx == '') then
      return {'CONFLICT', i, head}
    end
    owner = r.tx
    dups = dups + 1
    recs[i] = existing
  else
    local v, h = tonumber(ver), tonumber(head)
    if v <= h then return {'CONFLICT', i, head} end
    if v > h + 1 then return {'GAP', i, head} end
  end
end
if dups == n then
  local out = {'DUP', epoch}
  for i = 1, n do out[#out + 1] = recs[i] end
  return out
end
if dups > 0 then
  -- Part of these tables is claimed with these staging paths and part is
  -- not: a correct client never asks this (claims are all or none).
  for i = 1, n do
    if not recs[i] then
      return {'CONFLICT', i, redis.call('HGET', KEYS[2], ARGV[6 + (i - 1) * 6])}
    end
  end
end

local seq = string.format('%d', redis.call('INCR', KEYS[3]))
for i = 1, n do
  local a = 6 + (i - 1) * 6
  local tbl, ver = ARGV[a], ARGV[a + 1]
  local rec = cjson.encode({st = 'staged', sp = ARGV[a + 2], fp = ARGV[a + 3], sz = ARGV[a + 4],
    et = ARGV[a + 5], tx = txn, ts = now, seq = seq})
  redis.call('HSET', KEYS[2], tbl, ver)
  redis.call('HSET', KEYS[6 + (i - 1) * 2], ver, rec)
  redis.call('ZADD', KEYS[7 + (i - 1) * 2], tonumber(ver), ver)
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[5], seq .. '-' .. (i - 1),
    'k', 'version', 't', tbl, 'v', ver, 'r', rec)
end
if txn ~= '' then
  redis.call('HSET', KEYS[5], 'record', ARGV[4], 'epoch', epoch, 'seq', seq)
  redis.call('EXPIRE', KEYS[5], 604800)
end
return {'OK', epoch, seq}
