-- append.lua: append row changes to the commit log under one catalog
-- sequence.
--
-- KEYS[1]  {C}:epoch   presence means Redis holds the catalog's state
-- KEYS[2]  {C}:seq     catalog sequence counter
-- KEYS[3]  {C}:log     commit-log stream, entry ids <seq>-<i>
-- ARGV[1]  approximate MAXLEN of the log
-- ARGV[2..] pairs: kind ("put" or "delete"), payload (row or key JSON)
--
-- Guarantee: all changes get one new sequence and consecutive entries, or
-- nothing is written. Replies {"NOEPOCH"} or {"OK", seq}.
if not catalog_epoch(KEYS[1]) then return NOEPOCH end
local seq = next_seq(KEYS[2])
local i = 0
for a = 2, #ARGV, 2 do
  local field = 'row'
  if ARGV[a] == 'delete' then field = 'key' end
  append_log(KEYS[3], ARGV[1], seq, i, 'k', ARGV[a], field, ARGV[a + 1])
  i = i + 1
end
return {'OK', seq}
