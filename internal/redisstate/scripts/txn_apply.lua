-- txn_apply.lua: append a committed transaction's catalog entries to the
-- commit log, once.
--
-- KEYS[1]  {C}:epoch        KEYS[2] {C}:recovering   the recovery lock
-- KEYS[3]  {C}:txn:<id>     the transaction's hash   KEYS[4] {C}:seq   KEYS[5] {C}:log
-- ARGV[1]  the recovery lock token ("" outside a recovery)
-- ARGV[2]  approximate MAXLEN of the log
-- ARGV[3..] entries: field count, then field/value pairs
--
-- Guarantee: the entries are appended under one new sequence at most once
-- per transaction (the hash remembers the sequence); outside a recovery
-- only while the epoch is present, during one only by the lock holder.
-- Replies {"NOEPOCH"} | {"NOLOCK"} | {"DONE", seq} | {"OK", seq}.
if ARGV[1] == '' then
  if not catalog_epoch(KEYS[1]) then return NOEPOCH end
elseif redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return {'NOLOCK'}
end
local done = redis.call('HGET', KEYS[3], 'applied_seq')
if done then return {'DONE', done} end
local seq = next_seq(KEYS[4])
local p, i = 3, 0
while p <= #ARGV do
  local nf = tonumber(ARGV[p])
  local e = {}
  for f = 1, nf * 2 do e[f] = ARGV[p + f] end
  append_log(KEYS[5], ARGV[2], seq, i, unpack(e))
  i = i + 1
  p = p + 1 + nf * 2
end
redis.call('HSET', KEYS[3], 'applied_seq', seq)
redis.call('EXPIRE', KEYS[3], 604800)
return {'OK', seq}
