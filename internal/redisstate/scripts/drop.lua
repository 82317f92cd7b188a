-- drop.lua: forget everything Redis knows of a table.
--
-- KEYS[1]  {C}:epoch
-- KEYS[2]  {C}:heads
-- KEYS[3]  {C}:seq
-- KEYS[4]  {C}:log
-- KEYS[5]  {C}:v:<table>
-- KEYS[6]  {C}:z:<table>
-- ARGV[1]  table
-- ARGV[2]  approximate MAXLEN of the commit log
--
-- Guarantee: head, records and index go together, with one log entry.
-- Replies {"NOEPOCH"} or {"OK", seq}.
if not catalog_epoch(KEYS[1]) then return NOEPOCH end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[5], KEYS[6])
local seq = next_seq(KEYS[3])
append_log(KEYS[4], ARGV[2], seq, 0, 'k', 'drop_table', 't', ARGV[1])
return {'OK', seq}
