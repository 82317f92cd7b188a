-- confirm.lua: check that a transaction's claims still stand, under the
-- epoch in which they were made.
--
-- KEYS[1]  {C}:epoch
-- KEYS[2..n+1]  each member's version records
-- ARGV[1]  the epoch the claims were made (or read) in
-- ARGV[2]  transaction id
-- ARGV[3..] pairs: version, staging path
--
-- Read-only. Replies 1 when the epoch is unchanged and every member's
-- record carries this transaction and staging path, else 0. A transaction
-- member is finalized only after this says 1 (or by recovery).
if catalog_epoch(KEYS[1]) ~= ARGV[1] then return 0 end
for i = 2, #KEYS do
  local a = 3 + (i - 2) * 2
  local raw = redis.call('HGET', KEYS[i], ARGV[a])
  if not raw then return 0 end
  local r = cjson.decode(raw)
  if r.tx ~= ARGV[2] or r.sp ~= ARGV[a + 1] then return 0 end
end
return 1
