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
-- ARGV[6]  the principal making the claim ("" for none), on its version entries
-- ARGV[7+7(i-1)] .. ARGV[13+7(i-1)]  table, version, staging path, final path, size, etag,
--           unproven ("1": the staging object was not seen before this
--           claim, and the size is the writer's word; "" otherwise)
-- Then, for the layers above (a namespace's object index), after the n
-- entries, with key positions counting into KEYS:
--   G, then G guards: key, field, op ("eq" | "absent" | "empty" | "card":
--   the set has value members | "disjoint": no member of the sorted set
--   key but value equals field, contains it or lies inside it, by '/'
--   segment), value
--   W, then W writes: op ("hset" | "hdel" | "sadd" | "srem" | "zadd" |
--   "zrem": score 0), key, field, value
--   D, then D version deletions: versions key, index key, ranges "s:e;s:e" (e "" = no end)
--   L, then L log entries: field count, then field/value pairs
--
-- Guarantee: either every table i gets version_i == head_i + 1 recorded as
-- staged (one catalog sequence for all, one log entry each), or nothing is
-- written. Validation reads everything first; writes follow (Lua has no
-- rollback). Replies:
--   {"NOEPOCH"}                  Redis lost our state: recover first
--   {"NOHEAD", i}                table i has no head yet: seed it from storage
--   {"CONFLICT", i, head[, sp]}  version_i is taken (by another staging path:
--                                sp, when its live record names one)
--   {"GAP", i, head}             version_i > head_i + 1
--   {"PENDING", i, head}         head_i's own claim is unproven, still staged:
--                                finish it (or see it taken back) first, since
--                                taking it back under this claim would leave
--                                a hole
--   {"DUP", epoch, rec_1..rec_n} all already claimed with these staging paths
--                                (by one transaction, for n > 1)
--   {"GUARD", g}                 guard g does not hold
--   {"OK", epoch, seq, deleted_1..deleted_D}
local epoch = catalog_epoch(KEYS[1])
if not epoch then return NOEPOCH end
local txn, now, n = ARGV[1], ARGV[2], tonumber(ARGV[3])

-- disjoint reports whether no member of sorted set key but except equals
-- loc, is a directory above it, or lies below it: O(segments + log n).
local function disjoint(key, loc, except)
  local from = 1
  while true do
    local slash = string.find(loc, '/', from, true)
    local dir = slash and string.sub(loc, 1, slash - 1) or loc
    if dir ~= except and redis.call('ZSCORE', key, dir) then return false end
    if not slash then break end
    from = slash + 1
  end
  -- Below loc: the members from "loc/" up to "loc0" ('0' follows '/').
  for _, m in ipairs(redis.call('ZRANGEBYLEX', key, '[' .. loc .. '/', '(' .. loc .. '0', 'LIMIT', 0, 2)) do
    if m ~= except then return false end
  end
  return true
end

-- The extra sections.
local p = 7 + n * 7
local guards, writes, dels, logs = {}, {}, {}, {}
for _ = 1, tonumber(ARGV[p]) do
  guards[#guards + 1] = {KEYS[tonumber(ARGV[p + 1])], ARGV[p + 2], ARGV[p + 3], ARGV[p + 4]}
  p = p + 4
end
p = p + 1
for _ = 1, tonumber(ARGV[p]) do
  writes[#writes + 1] = {ARGV[p + 1], KEYS[tonumber(ARGV[p + 2])], ARGV[p + 3], ARGV[p + 4]}
  p = p + 4
end
p = p + 1
for _ = 1, tonumber(ARGV[p]) do
  dels[#dels + 1] = {KEYS[tonumber(ARGV[p + 1])], KEYS[tonumber(ARGV[p + 2])], ARGV[p + 3]}
  p = p + 3
end
p = p + 1
for _ = 1, tonumber(ARGV[p]) do
  local nf = tonumber(ARGV[p + 1])
  local e = {}
  for f = 1, nf * 2 do e[f] = ARGV[p + 1 + f] end
  logs[#logs + 1] = e
  p = p + 1 + nf * 2
end
local dups, recs, owner = 0, {}, nil
for i = 1, n do
  local a = 7 + (i - 1) * 7
  local tbl, ver, staging = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local head = redis.call('HGET', KEYS[2], tbl)
  if not head then return {'NOHEAD', i} end
  local existing = redis.call('HGET', KEYS[6 + (i - 1) * 2], ver)
  -- A claim taken back (retract.lua) holds nothing.
  if existing and cjson.decode(existing).st == 'retracted' then existing = nil end
  if existing then
    -- Taken. By this very staging path (a retry after a lost reply, or a
    -- helper's roll-forward)? Then it is a duplicate, not a conflict.
    local r = cjson.decode(existing)
    if r.sp ~= staging or (owner ~= nil and r.tx ~= owner) or (n > 1 and r.tx == '') then
      local by = ''
      if r.st ~= 'deleted' and r.sp then by = r.sp end
      return {'CONFLICT', i, head, by}
    end
    owner = r.tx
    dups = dups + 1
    recs[i] = existing
  else
    local v, h = tonumber(ver), tonumber(head)
    if v <= h then return {'CONFLICT', i, head} end
    if v > h + 1 then return {'GAP', i, head} end
    local below = redis.call('HGET', KEYS[6 + (i - 1) * 2], head)
    if below then
      local b = cjson.decode(below)
      if b.st == 'staged' and b.pf == '1' then return {'PENDING', i, head} end
    end
  end
end
if n > 0 and dups == n then
  local out = {'DUP', epoch}
  for i = 1, n do out[#out + 1] = recs[i] end
  return out
end
if dups > 0 then
  -- Part of these tables is claimed with these staging paths and part is
  -- not: a correct client never asks this (claims are all or none).
  for i = 1, n do
    if not recs[i] then
      return {'CONFLICT', i, redis.call('HGET', KEYS[2], ARGV[7 + (i - 1) * 7])}
    end
  end
end

-- Every write is known before anything is written (a script that fails
-- half-way keeps what it wrote).
for _, w in ipairs(writes) do
  local op = w[1]
  if op ~= 'hset' and op ~= 'hdel' and op ~= 'sadd' and op ~= 'srem' and op ~= 'zadd' and op ~= 'zrem' then
    return redis.error_reply('claim.lua: unknown write ' .. tostring(op))
  end
end

for g, gd in ipairs(guards) do
  local key, field, op, want = gd[1], gd[2], gd[3], gd[4]
  local ok
  if op == 'eq' then ok = redis.call('HGET', key, field) == want
  elseif op == 'absent' then ok = redis.call('HEXISTS', key, field) == 0
  elseif op == 'empty' then ok = redis.call('SCARD', key) == 0
  elseif op == 'card' then ok = redis.call('SCARD', key) == tonumber(want)
  elseif op == 'disjoint' then ok = disjoint(key, field, want)
  else return redis.error_reply('claim.lua: unknown guard ' .. tostring(op)) end
  if not ok then return {'GUARD', g} end
end

local seq = next_seq(KEYS[3])
local out = {'OK', epoch, seq}
for _, w in ipairs(writes) do
  local op, key, field, value = w[1], w[2], w[3], w[4]
  if op == 'hset' then redis.call('HSET', key, field, value)
  elseif op == 'hdel' then redis.call('HDEL', key, field)
  elseif op == 'sadd' then redis.call('SADD', key, value)
  elseif op == 'srem' then redis.call('SREM', key, value)
  elseif op == 'zadd' then redis.call('ZADD', key, 0, value)
  elseif op == 'zrem' then redis.call('ZREM', key, value) end
end
for _, d in ipairs(dels) do
  local count = 0
  for range in string.gmatch(d[3], '[^;]+') do
    local lo, hi = string.match(range, '^(%d+):(%d*)$')
    if hi == '' then hi = '+inf' else hi = '(' .. hi end
    for _, ver in ipairs(redis.call('ZRANGE', d[2], lo, hi, 'BYSCORE')) do
      local raw = redis.call('HGET', d[1], ver)
      if not raw or cjson.decode(raw).st ~= 'staged' then
        redis.call('HSET', d[1], ver, '{"st":"deleted"}')
        redis.call('ZREM', d[2], ver)
        count = count + 1
      end
    end
  end
  out[#out + 1] = count
end
for i = 1, n do
  local a = 7 + (i - 1) * 7
  local tbl, ver = ARGV[a], ARGV[a + 1]
  local r = {st = 'staged', sp = ARGV[a + 2], fp = ARGV[a + 3], sz = ARGV[a + 4],
    et = ARGV[a + 5], tx = txn, ts = now, seq = seq}
  if ARGV[a + 6] == '1' then r.pf = '1' end
  local rec = cjson.encode(r)
  redis.call('HSET', KEYS[2], tbl, ver)
  redis.call('HSET', KEYS[6 + (i - 1) * 2], ver, rec)
  redis.call('ZADD', KEYS[7 + (i - 1) * 2], tonumber(ver), ver)
  if ARGV[6] == '' then
    append_log(KEYS[4], ARGV[5], seq, (i - 1), 'k', 'version', 't', tbl, 'v', ver, 'r', rec)
  else
    append_log(KEYS[4], ARGV[5], seq, (i - 1), 'k', 'version', 't', tbl, 'v', ver, 'r', rec, 'p', ARGV[6])
  end
end
-- Entries of the layers above follow the version entries.
local li = n
for _, e in ipairs(logs) do
  append_log(KEYS[4], ARGV[5], seq, li, unpack(e))
  li = li + 1
end
if txn ~= '' then
  redis.call('HSET', KEYS[5], 'record', ARGV[4], 'epoch', epoch, 'seq', seq)
  redis.call('EXPIRE', KEYS[5], 604800)
end
return out
