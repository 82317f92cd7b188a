-- fork.lua: start a branch's version chain at its fork version.
--
-- KEYS[1]  {C}:epoch
-- KEYS[2]  {C}:heads
-- KEYS[3]  {C}:seq
-- KEYS[4]  {C}:log
-- KEYS[5]  {C}:v:<chain>    version records
-- KEYS[6]  {C}:z:<chain>    version index
-- ARGV[1]  chain (a table key: <table>/tree/<branch>)
-- ARGV[2]  version: the fork version, the chain's first (0: only forget)
-- ARGV[3]  "1" when the caller found no final manifest of the chain in
--          storage (Lance removed the branch): what Redis knows of it
--          is forgotten first, with a drop_table log entry
-- ARGV[4]  approximate MAXLEN of the commit log
--
-- Guarantee: a chain with versions is never moved: without ARGV[3] the
-- script only starts a chain that has none (head absent or 0, nothing
-- indexed), by raising its head to version - 1 so that the next claim is
-- the fork version; with ARGV[3] a chain is forgotten only when none of
-- its records is an unfinished claim. Replies {"NOEPOCH"}, {"BUSY"} (a
-- claim of the chain is in flight) or {"OK", head} with the head after it.
if not catalog_epoch(KEYS[1]) then return NOEPOCH end
local chain, ver = ARGV[1], tonumber(ARGV[2])
local head = tonumber(redis.call('HGET', KEYS[2], chain) or '0')
if ARGV[3] == '1' and (head > 0 or redis.call('ZCARD', KEYS[6]) > 0) then
  for _, raw in ipairs(redis.call('HVALS', KEYS[5])) do
    if cjson.decode(raw).st == 'staged' then return {'BUSY'} end
  end
  redis.call('HDEL', KEYS[2], chain)
  redis.call('DEL', KEYS[5], KEYS[6])
  local seq = next_seq(KEYS[3])
  append_log(KEYS[4], ARGV[4], seq, 0, 'k', 'drop_table', 't', chain)
  head = 0
end
if ver > 0 and head == 0 and redis.call('ZCARD', KEYS[6]) == 0 then
  head = ver - 1
  redis.call('HSET', KEYS[2], chain, string.format('%d', head))
end
return {'OK', string.format('%d', head)}
