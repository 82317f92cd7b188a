-- latest.lua: the heads of several tables at one catalog sequence.
--
-- KEYS[1]  {C}:epoch
-- KEYS[2]  {C}:heads
-- KEYS[3]  {C}:seq
-- ARGV     tables
--
-- Read-only; a multi-table claim is either wholly visible or not at all.
-- Replies {"NOEPOCH"} or {"OK", seq, head_1 .. head_n} ("" for no head).
if not catalog_epoch(KEYS[1]) then return NOEPOCH end
local out = {'OK', redis.call('GET', KEYS[3]) or '0'}
for i = 1, #ARGV do
  out[#out + 1] = redis.call('HGET', KEYS[2], ARGV[i]) or ''
end
return out
