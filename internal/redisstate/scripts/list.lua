-- list.lua: a page of a table's version records, in version order.
--
-- KEYS[1]  {C}:epoch
-- KEYS[2]  {C}:heads
-- KEYS[3]  {C}:v:<table>    version records
-- KEYS[4]  {C}:z:<table>    version index
-- ARGV[1]  table
-- ARGV[2]  "asc" or "desc"
-- ARGV[3]  exclusive start version ("" for the first page)
-- ARGV[4]  page size
--
-- Read-only. Replies {"NOEPOCH"} | {"NOHEAD"} |
-- {"OK", epoch, head, version_1, record_1, ...}.
local epoch = catalog_epoch(KEYS[1])
if not epoch then return NOEPOCH end
local head = redis.call('HGET', KEYS[2], ARGV[1])
if not head then return {'NOHEAD'} end
local vers
if ARGV[2] == 'desc' then
  local hi = '+inf'
  if ARGV[3] ~= '' then hi = '(' .. ARGV[3] end
  vers = redis.call('ZRANGE', KEYS[4], hi, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, tonumber(ARGV[4]))
else
  local lo = '-inf'
  if ARGV[3] ~= '' then lo = '(' .. ARGV[3] end
  vers = redis.call('ZRANGE', KEYS[4], lo, '+inf', 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[4]))
end
local out = {'OK', epoch, head}
for _, v in ipairs(vers) do
  local rec = redis.call('HGET', KEYS[3], v)
  if rec then
    out[#out + 1] = v
    out[#out + 1] = rec
  end
end
return out
